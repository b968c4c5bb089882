"""The retention plan's Spark work: the commits reduced to what `decide` needs, per partition and topic.

The commits (10 M on a large cluster, 100 M on a very large one) are the only big input; everything else has
one row per partition, topic or group, and the rules that decide what is deleted are `decide.py`'s. So:
1. `prepare` (driver): the groups are classified (`decide.classify`: counted, outside `include`, ignored)
   and the run's ids fixed (catalog.py); the commits are then read as ids, only for groups that matter.
2. One aggregation over the commits, per partition: how many counted groups committed, the minimum and
   maximum commit, and the lowest and highest group id at the minimum (packed under the offset), so a
   lone group at the minimum is named with no other read (`decide.CommitStats`).
3. Who reads which topic, from the commits flagged `first_of_topic` (one per group and topic): per topic,
   how many counted groups read it (its committers with its subscribed and required groups) and, for
   `exclusive`, which groups outside `include` do; and which counted groups read a matched topic at all
   (the DeleteRecords guard). A counted commit on a partition the snapshot does not list marks its topic
   as grown (`decide.TopicFacts`).
4. `SparkNames`: reads of the commits filtered to the partitions a hold concerns name the groups behind
   it, as `decide` asks: the readers a partition lacks, groups with an out-of-range commit, groups tied
   at the minimum, for a budget's eviction and for unread loss the groups committed below an offset (its
   target, the log start), and the next commit above a lone group's (what it pins, `decide.pin`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ebb_operator.analysis.catalog import Catalog, unlisted_topic
from ebb_operator.analysis.decide import (
    MAX_NAMED,
    NOBODY,
    CommitStats,
    GroupCommit,
    GroupRoles,
    Missing,
    Named,
    PartitionFacts,
    PlanResult,
    TopicFacts,
    classify,
    decide,
    matched_topics,
    summarize,
    with_commit_times,
)
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import Snapshot

# Named commits (the `__consumer_offsets` source, tests): `plan_from_offsets` maps them onto ids.
OFFSETS_SCHEMA = "group string, topic string, partition int, committed_offset long, commit_timestamp long"


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


def share_group_commits(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """The share groups' start offsets as named commits (OFFSETS_SCHEMA, no commit times): whichever
    source the commits come from, a share group's consumed level counts as a consumer group's commit."""
    rows = [
        (group, tp.topic, tp.partition, offset, None)
        for group, offsets in sorted(snapshot.share_offsets.items())
        for tp, offset in sorted(offsets.items())
    ]
    return spark.createDataFrame(rows, OFFSETS_SCHEMA)


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
    groups = with_commit_times(snapshot.groups, last)
    inputs = prepare(replace(snapshot, groups=groups), policy, now_ms)
    commits = inputs.catalog.encode(offsets).persist()
    try:
        return compute_plan(commits, inputs)
    finally:
        commits.unpersist()


def compute_plan(commits: DataFrame, inputs: PlanInputs) -> PlanResult:
    """The plan from the commits of `inputs.catalog.groups` (catalog.COMMITS_SCHEMA)."""
    facts = partition_facts(commits, inputs)
    decisions = decide(
        facts.partitions,
        SparkNames(commits, inputs),
        exclusive=inputs.policy.exclusive,
        failed_groups=inputs.roles.failed,
        budget=inputs.policy.budget,
    )
    return summarize(decisions, facts.counted_readers)


@dataclass(frozen=True)
class Facts:
    partitions: list[PartitionFacts]  # in the catalog's partition order (tp)
    counted_readers: list[str]  # counted groups reading some matched topic: the DeleteRecords guard


def partition_facts(commits: DataFrame, inputs: PlanInputs) -> Facts:
    """Steps 2 and 3: what `decide` knows of every partition, from two aggregations over the commits."""
    cat = inputs.catalog
    stats, first, grown = _partition_stats(commits, cat)
    readers, outsiders, counted_readers = _readers(commits, inputs, first)
    topics = [
        TopicFacts(t, readers.get(tid, 0), outsiders.get(tid, NOBODY), tid in grown)
        for tid, t in enumerate(cat.topics)
    ]
    empty = CommitStats()
    partitions = [
        PartitionFacts(p, topics[cat.tp_topic[tp]], stats.get(tp, empty))
        for tp, p in enumerate(cat.partitions)
    ]
    return Facts(partitions, counted_readers)


# -- 2. the aggregation over the commits --------------------------------------------------------------


def _partition_stats(
    commits: DataFrame, catalog: Catalog
) -> tuple[dict[int, CommitStats], dict[int, int], set[int]]:
    """The hot path: one aggregation over the counted commits, without a join. Returns the partitions'
    stats, per topic how many counted groups commit on it (a group's first partition of a topic is
    flagged once), and the topics with a counted commit on a partition the snapshot does not list."""
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
    stats: dict[int, CommitStats] = {}
    first: dict[int, int] = {}
    grown: set[int] = set()
    for r in rows:
        tp = r["tp"]
        tid = unlisted_topic(tp)
        if tid is not None:  # a partition the snapshot does not list: the topic grew since
            grown.add(tid)
        else:
            tid = catalog.tp_topic[tp]
            lowest, highest = r["lowest"], r["highest"]
            # The lowest and highest group id at the minimum; the same id: that group is alone there.
            alone = None
            if lowest is not None and highest is not None and lowest & mask == mask - (highest & mask):
                alone = catalog.groups[lowest & mask]
            stats[tp] = CommitStats(r["committed"], r["min_committed"], r["max_committed"], alone)
        first[tid] = first.get(tid, 0) + r["first"]
    return stats, first, grown


# -- 3. who reads which topic -------------------------------------------------------------------------


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


def _readers(
    commits: DataFrame, inputs: PlanInputs, committers: Mapping[int, int]
) -> tuple[dict[int, int], dict[int, Named], list[str]]:
    """From the commits flagged first_of_topic (one per group and topic), in one aggregation per topic and
    per group (grouping sets): the counted groups that commit on some topic, how many of a topic's expected
    readers commit on it, and for `exclusive` the groups outside include that do. `committers`: tid ->
    counted groups committing on it (from the hot aggregation). Returns per topic its counted readers and
    its outsiders, and the counted groups reading some matched topic."""
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
                outsiders[tid] = Named(total, tuple(sorted(committing | subscribed)[:MAX_NAMED]))
    guard = {cat.groups[r["gid"]] for r in rows if r["level"] == 2 and r["committers"]}
    guard.update(g for gs in roles.expected.values() for g in gs)
    return count, outsiders, sorted(guard)


# -- 4. names, where a partition needs them -----------------------------------------------------------


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
            Named(values[i], tuple(catalog.groups[g] for g in values[i + 1]))
            for i in range(0, len(values), 2)
        ]
    return out


class SparkNames:
    """`decide.GroupNames` over the run's commits (partitions by their catalog id, tp)."""

    def __init__(self, commits: DataFrame, inputs: PlanInputs) -> None:
        self.commits = commits
        self.inputs = inputs

    def _counted(self) -> DataFrame:
        return self.commits.filter(F.col("gid") < self.inputs.catalog.counted)

    def missing(self, partitions: Sequence[int]) -> dict[int, Missing]:
        """For partitions with fewer counted commits than their topic has readers: the readers without a
        commit there, all of them and the required ones."""
        commits, cat, roles = self.commits, self.inputs.catalog, self.inputs.roles
        gid_of = {g: i for i, g in enumerate(cat.groups)}
        tids = sorted({cat.tp_topic[tp] for tp in partitions})
        expected = [(gid_of[g], tid) for tid in tids for g in roles.expected.get(cat.topics[tid].topic, ())]
        readers = (
            commits.filter(F.col("first_of_topic") & (F.col("gid") < cat.counted) & F.col("tid").isin(tids))
            .select("gid", "tid")
            .unionByName(_pairs(commits, expected))
            .distinct()
        )
        lacking = _tp_frame(commits, partitions, [cat.tp_topic[tp] for tp in partitions])
        lacking = lacking.withColumnRenamed("value", "tid")
        present = self._counted().join(F.broadcast(lacking.select("tp")), "tp")
        absent = (
            readers.join(F.broadcast(lacking), "tid")
            .select("gid", "tp")
            .join(present.select("gid", "tp"), ["gid", "tp"], "left_anti")
        )
        required = [gid_of[g] for g in roles.required if g in gid_of]
        flag = F.col("gid").isin(required) if required else F.lit(False)
        return {tp: Missing(everyone, req) for tp, (everyone, req) in _named(absent, cat, flag).items()}

    def out_of_range(self, partitions: Sequence[int]) -> dict[int, Named]:
        cat = self.inputs.catalog
        bounds = cat.bounds(self.commits.sparkSession).join(
            F.broadcast(_tp_frame(self.commits, partitions)), "tp"
        )
        offset = F.col("committed_offset")
        rows = (
            self._counted()
            .join(F.broadcast(bounds), "tp")
            .filter((offset < F.col("log_start")) | (offset > F.col("high_watermark")))
        )
        return {tp: named for tp, (named,) in _named(rows, cat).items()}

    def at_minimum(self, minimum: Mapping[int, int]) -> dict[int, Named]:
        rows = (
            self._counted()
            .join(F.broadcast(_tp_frame(self.commits, list(minimum), list(minimum.values()))), "tp")
            .filter(F.col("committed_offset") == F.col("value"))
        )
        return {tp: named for tp, (named,) in _named(rows, self.inputs.catalog).items()}

    def below(self, limits: Mapping[int, int]) -> dict[int, list[GroupCommit]]:
        """Every counted group committed below each partition's limit, with its commit (a budget's eviction
        asks for the few partitions over budget)."""
        cat = self.inputs.catalog
        required = self.inputs.roles.required
        rows = (
            self._counted()
            .join(F.broadcast(_tp_frame(self.commits, list(limits), list(limits.values()))), "tp")
            .filter(F.col("committed_offset") < F.col("value"))
            .select("tp", "gid", "committed_offset")
            .toArrow()
            .to_pylist()
        )
        out: dict[int, list[GroupCommit]] = {}
        for r in rows:
            group = cat.groups[r["gid"]]
            out.setdefault(r["tp"], []).append(GroupCommit(group, r["committed_offset"], group in required))
        return {tp: sorted(found) for tp, found in out.items()}

    def above(self, minimum: Mapping[int, int]) -> dict[int, int]:
        rows = (
            self._counted()
            .join(F.broadcast(_tp_frame(self.commits, list(minimum), list(minimum.values()))), "tp")
            .filter(F.col("committed_offset") > F.col("value"))
            .groupBy("tp")
            .agg(F.min("committed_offset").alias("next"))
            .toArrow()
            .to_pylist()
        )
        return {r["tp"]: r["next"] for r in rows}
