"""The cluster state one plan is computed from, read through the operator's Kafka adapter.

Partitions: log start (ListOffsets EARLIEST), high watermark (LATEST), bytes on disk (DescribeLogDirs) and
the offset of the first record at or after `now - consumedRetention` (ListOffsets by timestamp, KIP-79), and
with a budget's maxAge the same at `now - maxAge`.
Topics: `cleanup.policy`. Groups: state, members and the topics their members are assigned. Share groups
(KIP-932): their state, and their start offsets on the matched topics (`Snapshot.share_offsets`), which
count as their commits; a topic they have state on is one they read.
Every failure is recorded next to the item it concerns (the plan holds that item, KIP-68's "-1"); only
failures that leave the whole picture unknown (listing topics or groups) raise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.kafka import EARLIEST, LATEST, ClusterAdmin, GroupListing, OffsetResult, TopicPartition
from ebb_operator.models.common import full_match


class SnapshotError(RuntimeError):
    """The cluster could not be read well enough to plan anything (e.g. topics or groups not listable)."""


class PartitionState(NamedTuple):
    topic: str
    partition: int
    log_start: int | None  # ListOffsets EARLIEST
    high_watermark: int | None  # ListOffsets LATEST
    size_bytes: int | None  # DescribeLogDirs, summed over replicas
    time_offset: int | None  # the first offset at or after now - consumedRetention (the HW if none)
    error: str | None  # any lookup failure: the plan holds the partition
    replica_bytes: int | None = None  # DescribeLogDirs, the largest replica (None: as size_bytes)
    age_offset: int | None = None  # the first offset at or after now - budget.maxAge (the HW if none)


class TopicState(NamedTuple):
    topic: str
    cleanup_policy: str | None
    error: str | None


class GroupState(NamedTuple):
    group: str
    state: str | None
    members: int | None  # None: unknown (the description failed, or a group only commits name)
    topics: Sequence[str]  # topics its members are assigned or subscribe to
    error: str | None
    empty_since: int | None  # ms; when it was first seen without members (None: it has members)
    last_commit: int | None = None  # ms of its latest commit, where the offsets source has commit times


@dataclass(frozen=True)
class Snapshot:
    """The small inputs of a plan: one row per partition, topic and group (commits come separately)."""

    taken_at_ms: int
    partitions: Sequence[PartitionState]
    topics: Sequence[TopicState]
    groups: Sequence[GroupState] = field(default_factory=list)
    # group -> partition -> start offset, for share groups (only partitions that have one)
    share_offsets: Mapping[str, Mapping[TopicPartition, int]] = field(default_factory=dict)


def matched_topics(names: list[str], policy: AnalysisPolicy) -> list[str]:
    """Topics the policy selects (RE2 full match, as the operator matches); only these are looked up."""
    return sorted(
        n
        for n in names
        if not n.startswith("__")
        and any(full_match(p, n) for p in policy.topics_include)
        and not any(full_match(p, n) for p in policy.topics_exclude)
    )


def take_snapshot(
    admin: ClusterAdmin, policy: AnalysisPolicy, now_ms: int, empty_since: Mapping[str, int] | None = None
) -> Snapshot:
    """The snapshot; `empty_since` is the operator's memory of when it first saw each group empty."""
    try:
        md = admin.metadata()
    except Exception as e:
        raise SnapshotError(f"cannot list topics: {e}") from e
    names = matched_topics(list(md.topics), policy)
    topic_rows: list[TopicState] = []
    tps: list[TopicPartition] = []
    configs = admin.topic_configs(names)
    for name in names:
        meta = md.topics[name]
        cfg = configs.get(name)
        error = meta.error or (cfg.error if cfg is not None else None)
        policy_value = cfg.configs.get("cleanup.policy") if cfg is not None and cfg.error is None else None
        if cfg is None:
            error_text: str | None = "DescribeConfigs: no answer for the topic"
        else:
            error_text = f"{'Metadata' if meta.error else 'DescribeConfigs'}: {error}" if error else None
        topic_rows.append(TopicState(name, policy_value.value if policy_value else None, error_text))
        tps.extend(TopicPartition(name, p) for p in meta.partitions)

    earliest = admin.offsets(tps, EARLIEST)
    latest = admin.offsets(tps, LATEST)
    by_time = admin.offsets(tps, now_ms - policy.consumed_retention_ms)
    max_age = policy.budget.max_age_ms if policy.budget is not None else None
    by_age = admin.offsets(tps, now_ms - max_age) if max_age is not None else {}
    try:
        sizes = admin.log_dir_replica_sizes(tps)
    except Exception:
        sizes = {}  # sizes feed the bytes estimate and a bytes budget, which is then unknown (never evicts)
    part_rows: list[PartitionState] = []
    for tp in tps:
        lo, hi, at = earliest.get(tp), latest.get(tp), by_time.get(tp)
        lookups = [("earliest", lo), ("latest", hi), ("timestamp", at)]
        if max_age is not None:
            lookups.append(("timestamp of budget.maxAge", by_age.get(tp)))
        errors = [
            f"ListOffsets {what}: {r.error if r is not None else 'no answer'}"
            for what, r in lookups
            if r is None or r.error is not None or r.offset is None
        ]
        time_offset, age_offset = _at_time(at, hi), _at_time(by_age.get(tp), hi)
        replicas = sizes.get(tp)
        part_rows.append(
            PartitionState(
                tp.topic,
                tp.partition,
                lo.offset if lo is not None else None,
                hi.offset if hi is not None else None,
                sum(replicas) if replicas else None,
                time_offset,
                "; ".join(errors) or None,
                max(replicas) if replicas else None,
                age_offset,
            )
        )

    try:
        listings = admin.list_groups()
    except Exception as e:
        raise SnapshotError(f"cannot list consumer groups: {e}") from e
    memory = empty_since or {}
    shares = [g for g in listings if g.is_share]
    group_rows, share_offsets = _share_groups(admin, shares, tps, now_ms, memory)
    listings = [g for g in listings if not g.is_share]
    described = admin.describe_groups(g.group_id for g in listings)
    for g in listings:
        d = described.get(g.group_id)
        if d is None or d.error is not None:
            failure = f"DescribeGroups: {d.error if d else 'no answer'}"
            group_rows.append(GroupState(g.group_id, g.state, None, [], failure, None))
            continue
        topics = {tp.topic for m in d.members for tp in m.assignment} | {
            t for m in d.members for t in m.subscription
        }
        since = min(memory.get(g.group_id, now_ms), now_ms) if not d.members else None
        group_rows.append(GroupState(g.group_id, d.state, len(d.members), sorted(topics), None, since))
    return Snapshot(now_ms, part_rows, topic_rows, group_rows, share_offsets)


def _share_groups(
    admin: ClusterAdmin,
    shares: Sequence[GroupListing],
    tps: Sequence[TopicPartition],
    now_ms: int,
    memory: Mapping[str, int],
) -> tuple[list[GroupState], dict[str, dict[TopicPartition, int]]]:
    """Share groups as groups: members known only as none (EMPTY) or some, the topics they have state on,
    and their start offsets (-1, no offset yet, left out: that partition is then held as a reader's
    missing commit holds it). A group that cannot be read carries its failure, so its topics are held."""
    # Every partition they have state on, not the matched ones: asked for a partition, Kafka answers -1
    # whether the group reads its topic or not.
    found = admin.share_group_offsets(g.group_id for g in shares) if shares else {}
    matched = set(tps)
    rows, offsets = [], {}
    for g in shares:
        answer = found.get(g.group_id)
        empty = g.state == "EMPTY"
        since = min(memory.get(g.group_id, now_ms), now_ms) if empty else None
        if not isinstance(answer, dict):
            failure = f"DescribeShareGroupOffsets: {answer or 'no answer'}"
            rows.append(GroupState(g.group_id, g.state, None, [], failure, None))
            continue
        answer = {tp: o for tp, o in answer.items() if tp in matched}
        read = sorted({tp.topic for tp in answer})
        rows.append(GroupState(g.group_id, g.state, 0 if empty else None, read, None, since))
        if started := {tp: o for tp, o in answer.items() if o >= 0}:
            offsets[g.group_id] = started
    return rows, offsets


def _at_time(at: OffsetResult | None, high: OffsetResult | None) -> int | None:
    """The offset ListOffsets by timestamp found, the high watermark for its -1 (KIP-79: no record at or
    after the timestamp, i.e. every record is older: the whole log); None when either lookup failed."""
    if at is None or at.offset is None or high is None or high.offset is None:
        return None
    return high.offset if at.offset < 0 else at.offset


def empty_groups(snapshot: Snapshot) -> dict[str, int]:
    """The memory for the next run: every group seen empty, since when (groups with members drop out)."""
    return {g.group: g.empty_since for g in snapshot.groups if g.empty_since is not None}
