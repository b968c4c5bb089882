"""The retention plan: for every partition of a matched topic, the offset before which records may go.

KIP-68's consumed retention: delete-before = min(committed offset of every counted group, the offset at
`now - consumedRetention`), capped by the high watermark. Every rule fails closed (DESIGN §4): when the plan
cannot prove that every counted group has read a record, the partition is held and the reason is named.

The commits (10 M on a large cluster, 100 M on a very large one) are the only big input; everything else has
one row per partition, topic or group. So:
1. `prepare` (driver): the groups are classified (counted, outside `include`, ignored) and the run's ids
   fixed (catalog.py); the commits are then read as ids, only for groups that matter.
2. One aggregation over the commits (Spark), per partition: how many counted groups committed, how many of
   those commits lie outside [log start, HW], the minimum in-range commit, and the lowest and highest group
   id at that minimum (packed under the offset), so a lone group at the minimum is named with no other read.
3. Who reads which topic, from the commits flagged `first_of_topic` (one per group and topic): per topic,
   how many counted groups commit on it (with its subscribed and required groups, its readers) and, for
   `exclusive`, which groups outside `include` do; and which counted groups read a matched topic at all
   (the DeleteRecords guard).
4. Only where a partition needs them, reads of the commits filtered to those partitions name the groups
   behind a hold: the readers a partition lacks (it has fewer commits than its topic has readers), groups
   with an out-of-range commit, and groups tied at the minimum.
5. The decision (driver, one row per partition), in the order of precedence of the holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ebb_operator.analysis.catalog import Catalog
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import GroupState, PartitionState, Snapshot, TopicState
from ebb_operator.models.common import full_match
from ebb_operator.models.delete_records import PartitionOffset
from ebb_operator.models.plan import (
    HeldPartition,
    HoldReason,
    LimitingGroup,
    PartitionPlan,
    PlanSummary,
    TopicPlan,
)

# Partition status.
DELETABLE = "Deletable"  # records below delete_before can go: in the DeleteRecords object
UP_TO_DATE = "UpToDate"  # nothing to delete now (the cut is at or below the log start offset)
HELD = "Held"  # a safety rule holds the partition; `reason` and `blocking_groups` say which
NOT_DELETABLE = "NotDeletable"  # cleanup.policy lacks delete: reported, never attempted (POLICY_VIOLATION)

# Reasons are the shared HoldReason values (models/plan.py), so the status the operator writes and the
# plan the job computes use one vocabulary.
LOOKUP_FAILED = HoldReason.LOOKUP_FAILED.value  # KIP-68: any lookup failure skips the partition; also a
#   counted group that could not be described (its topics are unknown), named in blocking_groups
CLEANUP_POLICY_COMPACT = HoldReason.COMPACT_ONLY.value
READ_BY_EXCLUDED_GROUP = HoldReason.NOT_EXCLUSIVE.value  # `exclusive`, as KIP-762 refuses shared topics
REQUIRED_GROUP_NOT_COMMITTED = HoldReason.REQUIRED_GROUP_MISSING.value
NO_COMMITTED_OFFSET = HoldReason.NO_COMMIT.value
OFFSET_OUT_OF_RANGE = HoldReason.OFFSET_OUT_OF_RANGE.value
NO_COUNTED_CONSUMERS = HoldReason.NO_COUNTED_CONSUMERS.value
NOTHING_TO_DELETE = HoldReason.NOTHING_TO_DELETE.value
# What limits the cut of a partition that is not held (`limited_by`).
LIMITED_BY_CONSUMERS = "ConsumerPosition"  # the slowest counted group: named in blocking_groups
LIMITED_BY_RETENTION = "ConsumedRetention"  # records from the cut on are younger than consumedRetention

# Named commits (the `__consumer_offsets` source, tests): `plan_from_offsets` maps them onto ids.
OFFSETS_SCHEMA = "group string, topic string, partition int, committed_offset long, commit_timestamp long"

MAX_NAMED = 20  # groups named per partition; `blocking_count` says how many there are
MAX_LIMITING_PER_TOPIC = 10


def _any(patterns: Iterable[str], name: str) -> bool:
    return any(full_match(p, name) for p in patterns)


def matched_topics(topics: Iterable[TopicState], policy: AnalysisPolicy) -> list[TopicState]:
    """Topics the policy selects (RE2 full match, as the operator matches); internal topics never."""
    return [
        t
        for t in topics
        if not t.topic.startswith("__")
        and _any(policy.topics_include, t.topic)
        and not _any(policy.topics_exclude, t.topic)
    ]


# -- 1. the groups -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRoles:
    """How the policy sees each group (DESIGN §4, consumers)."""

    counted: list[str]  # in include (or required, or outside the namespace's grant) and not inactive
    outside: list[str]  # active, outside include: what `exclusive` refuses
    required: frozenset[str]
    failed: list[str]  # counted groups whose description failed: their topics are unknown
    expected: dict[str, set[str]]  # topic -> counted groups that read it without a commit being needed
    #   (assigned or subscribed members; required groups read every matched topic)
    subscribed_outsiders: dict[str, set[str]]  # topic -> groups outside include assigned/subscribed to it


def classify(
    groups: Iterable[GroupState], policy: AnalysisPolicy, now_ms: int, topics: Iterable[str]
) -> GroupRoles:
    known = {g.group: g for g in groups}
    for name in policy.required:
        # A required group counts before it has ever shown up: its absence is exactly what must hold deletes.
        known.setdefault(name, GroupState(name, None, None, (), None, None))
    matched = set(topics)
    cutoff = None if policy.inactive_after_ms is None else now_ms - policy.inactive_after_ms
    counted, outside, failed = [], [], []
    expected: dict[str, set[str]] = {t: set(policy.required) for t in matched}
    subscribed_outsiders: dict[str, set[str]] = {}
    for name in sorted(known):
        g = known[name]
        required = name in policy.required
        # A group outside the namespace's grant (KafkaCluster spec.access[].groups) cannot be left out: it
        # counts as if included, and never expires.
        discountable = policy.discountable_groups is None or _any(policy.discountable_groups, name)
        in_include = (
            required
            or not discountable
            or (_any(policy.groups_include, name) and not _any(policy.groups_exclude, name))
        )
        inactive = False
        if cutoff is not None and not required and discountable and g.error is None and not g.members:
            # Pulsar-style expiry: no members and no commit for inactiveAfter. Where commit times are unknown
            # (the Admin API source: OffsetFetch carries none) the group must have been seen empty for as
            # long (the coordinator's state timestamp, or the operator's memory across runs). A group whose
            # description failed is never called inactive: its members are unknown.
            if g.last_commit is not None:
                inactive = g.last_commit < cutoff
            else:
                inactive = g.empty_since is not None and g.empty_since <= cutoff
        if inactive:
            continue
        reads = matched.intersection(g.topics)
        if in_include:
            counted.append(name)
            if g.error is not None:
                failed.append(name)
            for t in reads:
                expected[t].add(name)
        else:
            outside.append(name)
            for t in reads:
                subscribed_outsiders.setdefault(t, set()).add(name)
    return GroupRoles(counted, outside, frozenset(policy.required), failed, expected, subscribed_outsiders)


@dataclass(frozen=True)
class PlanInputs:
    """Everything a plan needs besides the commits, fixed before they are read."""

    catalog: Catalog
    roles: GroupRoles
    policy: AnalysisPolicy
    now_ms: int


def prepare(snapshot: Snapshot, policy: AnalysisPolicy, now_ms: int) -> PlanInputs:
    """Classify the groups and fix the run's ids; the commits are read for `catalog.groups` only."""
    topics = matched_topics(snapshot.topics, policy)
    roles = classify(snapshot.groups, policy, now_ms, [t.topic for t in topics])
    read = roles.counted + (roles.outside if policy.exclusive else [])
    catalog = Catalog.of(read, len(roles.counted), topics, snapshot.partitions)
    return PlanInputs(catalog, roles, policy, now_ms)


def plan_from_offsets(
    offsets: DataFrame, snapshot: Snapshot, policy: AnalysisPolicy, now_ms: int
) -> PlanResult:
    """The plan from named commits (OFFSETS_SCHEMA: the `__consumer_offsets` source, tests). Groups seen
    only in commits join the snapshot's, and commit times decide inactivity where the source has them."""
    last = {
        r["group"]: r["last_commit"]
        for r in offsets.groupBy("group")
        .agg(F.max("commit_timestamp").alias("last_commit"))
        .toArrow()
        .to_pylist()
    }
    groups = [g._replace(last_commit=last.get(g.group)) for g in snapshot.groups]
    described = {g.group for g in groups}
    groups += [
        GroupState(n, None, None, (), None, None, t) for n, t in sorted(last.items()) if n not in described
    ]
    inputs = prepare(
        Snapshot(snapshot.taken_at_ms, snapshot.partitions, snapshot.topics, groups), policy, now_ms
    )
    commits = inputs.catalog.encode(offsets).persist()
    try:
        return compute_plan(commits, inputs)
    finally:
        commits.unpersist()


# -- 2. the aggregation over the commits --------------------------------------------------------------


@dataclass(frozen=True)
class CommitStats:
    """One partition's counted commits."""

    committed: int  # counted groups with a commit on it
    first: int  # of which this is the first partition of the topic they commit on (summed over a topic's
    #   partitions: how many counted groups commit on the topic)
    min_committed: int | None
    max_committed: int | None
    lowest: int | None  # the lowest and highest group id at the minimum; None when the offset is too large
    highest: int | None  # to pack an id under it (then the groups at the minimum are read again)


def _partition_stats(commits: DataFrame, catalog: Catalog) -> dict[int, CommitStats]:
    """The hot path: one aggregation over the counted commits, without a join."""
    bits = catalog.gid_bits()
    scale = 1 << bits
    offset, gid = F.col("committed_offset"), F.col("gid").cast("long")
    # offset * 2^bits + gid stays below 2^62 for offsets below 2^(62 - bits) (4.5e15 with 1 000 groups).
    packable = offset < F.lit(1 << (62 - bits))
    packed = offset * F.lit(scale)
    rows = (
        commits.filter(F.col("gid") < catalog.counted)
        .groupBy("tp")
        .agg(
            F.count(F.lit(1)).alias("committed"),
            F.count_if("first_of_topic").alias("first"),
            F.min(offset).alias("min_committed"),
            F.max(offset).alias("max_committed"),
            F.min(F.when(packable, packed + gid)).alias("lowest"),
            F.min(F.when(packable, packed + F.lit(scale - 1) - gid)).alias("highest"),
        )
        .toArrow()
        .to_pylist()
    )
    mask = scale - 1
    return {
        r["tp"]: CommitStats(
            r["committed"],
            r["first"],
            r["min_committed"],
            r["max_committed"],
            None if r["lowest"] is None else r["lowest"] & mask,
            None if r["highest"] is None else mask - (r["highest"] & mask),
        )
        for r in rows
    }


# -- 3. who reads which topic -------------------------------------------------------------------------


@dataclass(frozen=True)
class Readers:
    count: dict[int, int]  # tid -> counted groups reading it (by commit, assignment, subscription, required)
    outsiders: dict[int, Named]  # tid -> groups outside include reading it (an `exclusive` policy's)
    counted_readers: list[str]  # counted groups reading some matched topic: the DeleteRecords guard


def _pairs(commits: DataFrame, pairs: Sequence[tuple[int, int]]) -> DataFrame:
    """(gid, tid) rows as a frame."""
    return commits.sparkSession.createDataFrame(
        pa.table(
            {
                "gid": pa.array([p[0] for p in pairs], pa.int32()),
                "tid": pa.array([p[1] for p in pairs], pa.int32()),
            }
        )
    )


def _readers(commits: DataFrame, inputs: PlanInputs, committers: Mapping[int, int]) -> Readers:
    """From the commits flagged first_of_topic (one per group and topic), in one aggregation per topic and
    per group (grouping sets): the counted groups that commit on some topic, how many of a topic's expected
    readers commit on it, and for `exclusive` the groups outside include that do. `committers`: tid ->
    counted groups committing on it (from the hot aggregation)."""
    cat, roles = inputs.catalog, inputs.roles
    tid_of = {t.topic: tid for tid, t in enumerate(cat.topics)}
    gid_of = {g: i for i, g in enumerate(cat.groups)}
    exclusive = inputs.policy.exclusive
    # Readers known without a commit: expected (counted) groups, and for `exclusive` subscribed outsiders.
    known = {tid_of[t]: set(gs) for t, gs in roles.expected.items()}
    if exclusive:
        for t, gs in roles.subscribed_outsiders.items():
            known.setdefault(tid_of[t], set()).update(gs)
    pairs = [(gid_of[g], tid) for tid, gs in known.items() for g in gs]
    gid = F.col("gid")
    first = commits.filter("first_of_topic").select("gid", "tid")
    if pairs:
        flags = _pairs(commits, pairs).withColumn("known", F.lit(True))
        first = first.join(F.broadcast(flags), ["gid", "tid"], "left")
    else:
        first = first.withColumn("known", F.lit(False))
    counted, outside, known_col = gid < cat.counted, gid >= cat.counted, F.col("known")
    aggs = [
        F.grouping_id().alias("level"),  # 1: per topic (gid aggregated away), 2: per group
        F.count_if(counted).alias("committers"),
        F.count_if(counted & known_col).alias("counted_known"),
    ]
    if exclusive:
        aggs += [
            F.count_if(outside).alias("outside"),
            F.count_if(outside & known_col).alias("outside_known"),
            F.slice(F.array_sort(F.collect_list(F.when(outside, gid))), 1, MAX_NAMED).alias("outside_gids"),
        ]
    rows = first.groupingSets([["tid"], ["gid"]], "tid", "gid").agg(*aggs).toArrow().to_pylist()
    per_topic = {r["tid"]: r for r in rows if r["level"] == 1}
    expected = {tid_of[t]: len(gs) for t, gs in roles.expected.items()}
    count = dict(expected)
    for tid, n in committers.items():
        # Readers: the groups that commit on the topic and the expected ones, each once.
        count[tid] = n + expected.get(tid, 0) - (per_topic[tid]["counted_known"] if tid in per_topic else 0)
    outsiders: dict[int, Named] = {}
    if exclusive:
        for tid in set(per_topic) | set(tid_of[t] for t in roles.subscribed_outsiders):
            r = per_topic.get(tid)
            subscribed = roles.subscribed_outsiders.get(cat.topics[tid].topic, set())
            committing = {cat.groups[g] for g in r["outside_gids"]} if r else set()
            total = (r["outside"] - r["outside_known"] if r else 0) + len(subscribed)
            if total:
                outsiders[tid] = Named(total, sorted(committing | subscribed)[:MAX_NAMED])
    guard = {cat.groups[r["gid"]] for r in rows if r["level"] == 2 and r["committers"]}
    guard.update(g for gs in roles.expected.values() for g in gs)
    return Readers(count, outsiders, sorted(guard))


# -- 4. names, where a partition needs them -----------------------------------------------------------


class Named(NamedTuple):
    """Groups named for a partition: how many there are, and the first MAX_NAMED in name order."""

    total: int
    names: list[str]


NOBODY = Named(0, [])


def _tp_frame(commits: DataFrame, tps: Sequence[int], values: Sequence[int] | None = None) -> DataFrame:
    columns: dict[str, pa.Array] = {"tp": pa.array(tps, pa.int32())}
    if values is not None:
        columns["value"] = pa.array(values, pa.int64())
    return commits.sparkSession.createDataFrame(pa.table(columns))


def _named(rows: DataFrame, catalog: Catalog, *flags: Column) -> dict[int, list[Named]]:
    """Per tp, the groups (`gid`) of `rows`: all of them, then those each flag selects. Counted group ids
    follow the groups' names, so the first ids are the first names."""

    def first(gid: Column) -> Column:
        return F.slice(F.array_sort(F.collect_list(gid)), 1, MAX_NAMED)

    gid = F.col("gid")
    aggs = [F.count(F.lit(1)), first(gid)]
    for flag in flags:
        aggs += [F.count_if(flag), first(F.when(flag, gid))]
    out = {}
    for r in rows.groupBy("tp").agg(*aggs).toArrow().to_pylist():
        values = list(r.values())[1:]
        out[r["tp"]] = [
            Named(values[i], [catalog.groups[g] for g in values[i + 1]]) for i in range(0, len(values), 2)
        ]
    return out


def _missing(commits: DataFrame, inputs: PlanInputs, lacking: Sequence[int]) -> dict[int, list[Named]]:
    """For partitions with fewer counted commits than their topic has readers: the readers without a
    commit there, all of them and the required ones."""
    cat, roles = inputs.catalog, inputs.roles
    gid_of = {g: i for i, g in enumerate(cat.groups)}
    tids = sorted({cat.tp_topic[tp] for tp in lacking})
    expected = [(gid_of[g], tid) for tid in tids for g in roles.expected.get(cat.topics[tid].topic, ())]
    readers = (
        commits.filter(F.col("first_of_topic") & (F.col("gid") < cat.counted) & F.col("tid").isin(tids))
        .select("gid", "tid")
        .unionByName(_pairs(commits, expected))
        .distinct()
    )
    lacking_tp = _tp_frame(commits, lacking, [cat.tp_topic[tp] for tp in lacking]).withColumnRenamed(
        "value", "tid"
    )
    present = commits.filter(F.col("gid") < cat.counted).join(F.broadcast(lacking_tp.select("tp")), "tp")
    absent = (
        readers.join(F.broadcast(lacking_tp), "tid")
        .select("gid", "tp")
        .join(present.select("gid", "tp"), ["gid", "tp"], "left_anti")
    )
    required = [gid_of[g] for g in roles.required if g in gid_of]
    return _named(absent, cat, F.col("gid").isin(required) if required else F.lit(False))


def _out_of_range(commits: DataFrame, catalog: Catalog, tps: Sequence[int]) -> dict[int, list[Named]]:
    bounds = catalog.bounds(commits.sparkSession).join(F.broadcast(_tp_frame(commits, tps)), "tp")
    offset = F.col("committed_offset")
    rows = (
        commits.filter(F.col("gid") < catalog.counted)
        .join(F.broadcast(bounds), "tp")
        .filter((offset < F.col("log_start")) | (offset > F.col("high_watermark")))
    )
    return _named(rows, catalog)


def _at_minimum(commits: DataFrame, catalog: Catalog, minimum: Mapping[int, int]) -> dict[int, list[Named]]:
    rows = (
        commits.filter(F.col("gid") < catalog.counted)
        .join(F.broadcast(_tp_frame(commits, list(minimum), list(minimum.values()))), "tp")
        .filter(F.col("committed_offset") == F.col("value"))
    )
    return _named(rows, catalog)


# -- 5. the decision ---------------------------------------------------------------------------------


@dataclass
class PartitionDecision:
    """One partition of the plan."""

    topic: str
    partition: int
    status: str
    reason: str | None
    limited_by: str | None
    blocking_groups: list[str]
    blocking_count: int
    log_start: int | None
    high_watermark: int | None
    delete_before: int | None
    records: int
    bytes: int
    lag_records: int
    lag_bytes: int
    size_bytes: int | None = None


def _deletes(cleanup_policy: str | None) -> bool:
    return "delete" in "".join((cleanup_policy or "").lower().split()).split(",")


def _share(size: int | None, records: int, span: int) -> int:
    """Bytes of `records` of a partition: its on-disk size spread evenly over its readable offsets
    (DescribeLogDirs gives no per-offset sizes; compacted gaps and a partly deleted first segment make this
    an estimate)."""
    return size * records // span if size and records > 0 and span > 0 else 0


def compute_plan(commits: DataFrame, inputs: PlanInputs) -> PlanResult:
    """The plan from the commits of `inputs.catalog.groups` (catalog.COMMITS_SCHEMA)."""
    cat, roles, policy = inputs.catalog, inputs.roles, inputs.policy
    stats = _partition_stats(commits, cat)
    committers: dict[int, int] = {}
    for tp, s in stats.items():
        tid = -1 - tp if tp < 0 else cat.tp_topic[tp]
        committers[tid] = committers.get(tid, 0) + s.first
    readers = _readers(commits, inputs, committers)
    # A counted group committed on a partition the snapshot does not list: the topic grew since the
    # snapshot; its partitions wait for the next run's.
    grown = {-1 - tp for tp, s in stats.items() if tp < 0 and s.committed > 0}
    failed = Named(len(roles.failed), roles.failed[:MAX_NAMED])
    none = CommitStats(0, 0, None, None, None, None)

    # The holds, in order of precedence; names are read only for partitions a hold of their kind concerns.
    holds: dict[int, tuple[str, str, Named]] = {}  # tp -> (status, reason, the groups behind it)
    for tp, p in enumerate(cat.partitions):
        tid = cat.tp_topic[tp]
        t = cat.topics[tid]
        if t.error or p.error or p.time_offset is None or tid in grown:
            holds[tp] = (HELD, LOOKUP_FAILED, NOBODY)
        elif not _deletes(t.cleanup_policy):
            holds[tp] = (NOT_DELETABLE, CLEANUP_POLICY_COMPACT, NOBODY)
        elif policy.exclusive and tid in readers.outsiders:
            holds[tp] = (HELD, READ_BY_EXCLUDED_GROUP, readers.outsiders[tid])
        elif roles.failed:
            holds[tp] = (HELD, LOOKUP_FAILED, failed)
    open_tps = [tp for tp in range(len(cat.partitions)) if tp not in holds]
    lacking = [
        tp for tp in open_tps if stats.get(tp, none).committed < readers.count.get(cat.tp_topic[tp], 0)
    ]
    missing = _missing(commits, inputs, lacking) if lacking else {}
    for tp in lacking:
        everyone, required = missing.get(tp, [Named(0, []), NOBODY])
        if required.total:
            holds[tp] = (HELD, REQUIRED_GROUP_NOT_COMMITTED, required)
        else:  # (fewer commits than readers and none found missing cannot happen; held all the same)
            holds[tp] = (HELD, NO_COMMITTED_OFFSET, everyone)
    stale = [
        tp
        for tp in open_tps
        if tp not in holds and _out_of_range_commits(cat.partitions[tp], stats.get(tp, none))
    ]
    for tp, (named,) in (_out_of_range(commits, cat, stale) if stale else {}).items():
        holds[tp] = (HELD, OFFSET_OUT_OF_RANGE, named)
    for tp in open_tps:
        if tp not in holds and readers.count.get(cat.tp_topic[tp], 0) == 0:
            holds[tp] = (HELD, NO_COUNTED_CONSUMERS, NOBODY)

    # The groups at the minimum of a partition whose cut they limit: the one group packed under the minimum
    # when it is alone there, otherwise read again.
    at_min: dict[int, Named] = {}
    ties: dict[int, int] = {}
    for tp in open_tps:
        s, p = stats.get(tp, none), cat.partitions[tp]
        if (
            tp in holds
            or s.min_committed is None
            or p.time_offset is None
            or s.min_committed >= p.time_offset
        ):
            continue
        if s.lowest is not None and s.lowest == s.highest:
            at_min[tp] = Named(1, [cat.groups[s.lowest]])
        else:
            ties[tp] = s.min_committed
    if ties:
        at_min.update((tp, named) for tp, (named,) in _at_minimum(commits, cat, ties).items())

    decisions = [
        _decide(cat.partitions[tp], stats.get(tp, none), holds.get(tp), at_min.get(tp, NOBODY))
        for tp in range(len(cat.partitions))
    ]
    return summarize(decisions, readers.counted_readers)


def _out_of_range_commits(p: PartitionState, s: CommitStats) -> bool:
    """Some counted commit lies outside [log start, HW] (lookups that failed are held before this)."""
    low, high = s.min_committed, s.max_committed
    return (low is not None and p.log_start is not None and low < p.log_start) or (
        high is not None and p.high_watermark is not None and high > p.high_watermark
    )


def _decide(
    p: PartitionState, s: CommitStats, hold: tuple[str, str, Named] | None, at_min: Named
) -> PartitionDecision:
    start, hw = p.log_start, p.high_watermark
    span = (hw - start) if hw is not None and start is not None else 0
    # How far the slowest counted group lags the high watermark (a commit below the log start has every
    # record yet to read): what it holds on disk.
    lag = 0
    if hw is not None and start is not None and s.min_committed is not None:
        lag = max(0, hw - max(s.min_committed, start))
    d = PartitionDecision(
        p.topic,
        p.partition,
        HELD,
        None,
        None,
        [],
        0,
        start,
        hw,
        None,
        0,
        0,
        lag,
        _share(p.size_bytes, lag, span),
        p.size_bytes,
    )
    if hold is not None:
        d.status, d.reason, (d.blocking_count, d.blocking_groups) = hold
        return d
    assert s.min_committed is not None and p.time_offset is not None and hw is not None and start is not None
    cut = min(s.min_committed, p.time_offset, hw)
    if s.min_committed < p.time_offset:
        d.limited_by = LIMITED_BY_CONSUMERS
        d.blocking_count, d.blocking_groups = at_min
    else:
        d.limited_by = LIMITED_BY_RETENTION
    if cut > start:
        d.status, d.delete_before, d.records = DELETABLE, cut, cut - start
        d.bytes = _share(p.size_bytes, d.records, span)
    else:
        d.status, d.reason = UP_TO_DATE, NOTHING_TO_DELETE
    return d


# -- the result --------------------------------------------------------------------------------------


@dataclass
class PlanResult:
    """The collected plan: the summary and per-topic list for the policy status, the partitions, the cuts,
    and the counted groups (the DeleteRecords' ConsumedBy guard)."""

    summary: PlanSummary
    topics: list[TopicPlan]
    partitions: list[PartitionPlan]
    deletes: list[PartitionOffset]
    counted_groups: list[str] = field(default_factory=list)
    decisions: list[PartitionDecision] = field(default_factory=list, repr=False)


def summarize(
    decisions: Sequence[PartitionDecision], counted_groups: Sequence[str] = (), max_held_per_topic: int = 100
) -> PlanResult:
    """The plan in the shared plan models (one entry per partition: small next to the commits)."""
    partitions: list[PartitionPlan] = []
    topics: dict[str, TopicPlan] = {}
    limiting: dict[str, dict[str, LimitingGroup]] = {}
    deletes: list[PartitionOffset] = []
    for r in sorted(decisions, key=lambda d: (d.topic, d.partition)):
        reason = HoldReason(r.reason) if r.reason is not None else None
        partitions.append(
            PartitionPlan.model_construct(  # computed here, nothing to validate (10 000s of them)
                topic=r.topic,
                partition=r.partition,
                log_start_offset=r.log_start,
                high_watermark=r.high_watermark,
                delete_before=r.delete_before,
                records=r.records,
                bytes=r.bytes,
                reason=reason,
                blocking_groups=list(r.blocking_groups),
                lag_records=r.lag_records,
                lag_bytes=r.lag_bytes,
            )
        )
        t = topics.setdefault(r.topic, TopicPlan(topic=r.topic))
        t.partitions += 1
        t.deletable_records += r.records
        t.reclaimable_bytes += r.bytes
        if r.status in (HELD, NOT_DELETABLE) and reason is not None:
            t.held_count += 1
            if len(t.held) < max_held_per_topic:
                t.held.append(
                    HeldPartition(
                        partition=r.partition,
                        reason=reason,
                        blocking_groups=list(r.blocking_groups),
                        blocking_count=r.blocking_count,
                    )
                )
        # Who holds the disk: the slowest counted group where it limits the cut, and a group behind a hold
        # with everything the partition retains (as far as the plan can tell, it has read none of it).
        if r.limited_by == LIMITED_BY_CONSUMERS:
            lag = (r.lag_records, r.lag_bytes)
        elif r.status == HELD and r.log_start is not None and r.high_watermark is not None:
            lag = (r.high_watermark - r.log_start, r.size_bytes or 0)
        else:
            lag = None
        if lag is not None:
            for g in r.blocking_groups:
                entry = limiting.setdefault(r.topic, {}).setdefault(g, LimitingGroup(group=g))
                entry.partitions += 1
                entry.lag_records += lag[0]
                entry.lag_bytes += lag[1]
        if r.status == DELETABLE and r.delete_before is not None:
            deletes.append(PartitionOffset(topic=r.topic, partition=r.partition, offset=r.delete_before))
    for name, groups in limiting.items():
        ranked = sorted(groups.values(), key=lambda g: (-g.lag_bytes, -g.lag_records, g.group))
        topics[name].limiting = ranked[:MAX_LIMITING_PER_TOPIC]
        topics[name].limiting_count = len(ranked)
    summary = PlanSummary(
        topics=len(topics),
        partitions=len(partitions),
        deletable_records=sum(t.deletable_records for t in topics.values()),
        reclaimable_bytes=sum(t.reclaimable_bytes for t in topics.values()),
        held_partitions=sum(t.held_count for t in topics.values()),
    )
    return PlanResult(
        summary, list(topics.values()), partitions, deletes, sorted(counted_groups), list(decisions)
    )
