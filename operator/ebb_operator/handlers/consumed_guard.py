"""The guards of DeleteRecords: never delete what a consumer group has not read.

`Consumed` looks at every group; `ConsumedBy` at the groups a RetentionPolicy counted (named in the
DeleteRecords), so a group the policy deliberately left out does not hold the cut while a counted group
that rewound its commit since the analysis does. A group reads a topic if it has committed an offset
for any of its partitions or one of its members is assigned one. For each partition to cut at offset O,
every such group must have committed >= O for that partition (a committed offset is the next record
to read, so everything below it was consumed). A reading group without a commit for the partition
holds it (DESIGN.md safety rules: fail closed, as KIP-68 skips a partition whose offsets are unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ebb_operator.kafka import GroupDescription, TopicPartition


def blocking_groups(
    tp: TopicPartition,
    offset: int,
    committed: Mapping[str, Mapping[TopicPartition, int]],
    descriptions: Mapping[str, GroupDescription],
    only: Iterable[str] | None = None,
) -> list[str]:
    """Groups that read `tp`'s topic and have not committed past `offset`, each with its position
    (among `only`, when given)."""
    blockers = []
    groups = set(committed) | set(descriptions)
    if only is not None:
        groups &= set(only)
    for group in sorted(groups):
        offsets = committed.get(group, {})
        desc = descriptions.get(group)
        assigned = desc is not None and any(a.topic == tp.topic for m in desc.members for a in m.assignment)
        reads_topic = assigned or any(t.topic == tp.topic for t in offsets)
        if not reads_topic:
            continue
        position = offsets.get(tp)
        if position is None:
            blockers.append(f"{group} (no committed offset)")
        elif position < offset:
            blockers.append(f"{group} (committed {position})")
    return blockers
