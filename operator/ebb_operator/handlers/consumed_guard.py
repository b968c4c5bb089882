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


def readers(
    committed: Mapping[str, Mapping[TopicPartition, int]],
    descriptions: Mapping[str, GroupDescription],
    only: Iterable[str] | None = None,
) -> dict[str, set[str]]:
    """topic -> the groups that read it (among `only`, when given): computed once per guard check, so
    a check of 100 partitions against 1 000 groups costs a lookup per group and partition."""
    groups = set(committed) | set(descriptions)
    if only is not None:
        groups &= set(only)
    out: dict[str, set[str]] = {}
    for group in groups:
        topics = {tp.topic for tp in committed.get(group, {})}
        desc = descriptions.get(group)
        if desc is not None:
            topics.update(a.topic for m in desc.members for a in m.assignment)
        for topic in topics:
            out.setdefault(topic, set()).add(group)
    return out


def blocking_groups(
    tp: TopicPartition,
    offset: int,
    committed: Mapping[str, Mapping[TopicPartition, int]],
    descriptions: Mapping[str, GroupDescription],
    only: Iterable[str] | None = None,
    *,
    reading: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """Groups that read `tp`'s topic and have not committed past `offset`, each with its position
    (among `only`, when given). `reading`: `readers(...)` of the same inputs, when already computed."""
    if reading is None:
        reading = readers(committed, descriptions, only)
    blockers = []
    for group in sorted(reading.get(tp.topic, ())):
        position = committed.get(group, {}).get(tp)
        if position is None:
            blockers.append(f"{group} (no committed offset)")
        elif position < offset:
            blockers.append(f"{group} (committed {position})")
    return blockers
