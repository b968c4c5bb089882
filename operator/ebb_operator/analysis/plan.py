"""The retention plan: for every partition of a matched topic, the offset before which records may go.

KIP-68's consumed retention as DataFrame operations (no Python UDFs: the 10 M committed offsets of a large
cluster stay in the JVM). delete-before = min(committed offset of every counted group, the offset at
`now - consumedRetention`), capped by the high watermark. Every rule fails closed (DESIGN §4): when the plan
cannot prove that every counted group has read a record, the partition is held and the reason is named.

Inputs (DataFrames; `snapshot.py` and `offsets_source.py` produce them):
  offsets    group, topic, partition, committed_offset, commit_timestamp   latest commit per key
  partitions topic, partition, log_start, high_watermark, size_bytes, time_offset, error
  topics     topic, cleanup_policy, error
  groups     group, state, members, topics (array), error, empty_since     from DescribeGroups (and
             the operator's memory of when it first saw the group empty)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ebb_operator.analysis.policy import AnalysisPolicy
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
# What limits the cut of a partition that is not held (column `limited_by`).
LIMITED_BY_CONSUMERS = "ConsumerPosition"  # the slowest counted group: named in blocking_groups
LIMITED_BY_RETENTION = "ConsumedRetention"  # records from the cut on are younger than consumedRetention

# The inputs' schemas (Spark DDL): the contract with snapshot.py and offsets_source.py.
OFFSETS_SCHEMA = "group string, topic string, partition int, committed_offset long, commit_timestamp long"
PARTITIONS_SCHEMA = (
    "topic string, partition int, log_start long, high_watermark long, size_bytes long, time_offset long, "
    "error string"
)
TOPICS_SCHEMA = "topic string, cleanup_policy string, error string"
GROUPS_SCHEMA = (
    "group string, state string, members int, topics array<string>, error string, empty_since long"
)

PLAN_COLUMNS = (
    "topic",
    "partition",
    "status",
    "reason",
    "limited_by",
    "blocking_groups",
    "log_start",
    "high_watermark",
    "delete_before",
    "records",
    "bytes",
    "lag_records",
    "lag_bytes",
)


def _matches(col: Column, patterns: Sequence[str]) -> Column:
    """Full-match against any pattern, as Kafka's pattern lists (Java regex, which Spark's rlike is)."""
    if not patterns:
        return F.lit(False)
    return col.rlike("|".join(f"^(?:{p})$" for p in patterns))


def classify_groups(offsets: DataFrame, groups: DataFrame, policy: AnalysisPolicy, now_ms: int) -> DataFrame:
    """One row per known group: whether it is counted, ignored as inactive, or outside `include`."""
    last_commit = offsets.groupBy("group").agg(F.max("commit_timestamp").alias("last_commit"))
    known = groups.join(last_commit, "group", "full_outer")
    if policy.required:
        # A required group counts before it has ever shown up: its absence is exactly what must hold deletes.
        names = offsets.sparkSession.createDataFrame([(g,) for g in policy.required], "group string")
        known = known.join(names, "group", "full_outer")
    # A group outside the namespace's grant (KafkaCluster spec.access[].groups) cannot be left out: it
    # counts as if included, and never expires.
    discountable = (
        F.lit(True)
        if policy.discountable_groups is None
        else _matches(F.col("group"), policy.discountable_groups)
    )
    by_pattern = (
        _matches(F.col("group"), policy.groups_include) & ~_matches(F.col("group"), policy.groups_exclude)
    ) | ~discountable
    required = F.col("group").isin(list(policy.required)) if policy.required else F.lit(False)
    if policy.inactive_after_ms is None:
        inactive = F.lit(False)
    else:
        # Pulsar-style expiry: no members and no commit for inactiveAfter. Where commit times are unknown
        # (the Admin API source: OffsetFetch carries none), the group must have been seen empty for as
        # long (the coordinator's state timestamp, or the operator's memory across runs). A group whose
        # description failed is never called inactive (its members are unknown); a required group, or
        # one the namespace may not leave out, never expires.
        cutoff = now_ms - policy.inactive_after_ms
        quiet = F.when(F.col("last_commit").isNotNull(), F.col("last_commit") < cutoff).otherwise(
            F.col("empty_since").isNotNull() & (F.col("empty_since") <= cutoff)
        )
        inactive = (
            (F.coalesce(F.col("members"), F.lit(0)) == 0)
            & F.col("error").isNull()
            & quiet
            & ~required
            & discountable
        )
    return known.select(
        "group",
        F.coalesce(F.col("topics"), F.array().cast("array<string>")).alias("snapshot_topics"),
        F.col("error").alias("group_error"),
        (by_pattern | required).alias("in_include"),
        required.alias("required"),
        inactive.alias("inactive"),
    ).withColumn("counted", F.col("in_include") & ~F.col("inactive"))


def compute_plan(
    offsets: DataFrame,
    partitions: DataFrame,
    topics: DataFrame,
    groups: DataFrame,
    policy: AnalysisPolicy,
    now_ms: int,
) -> DataFrame:
    """The plan: one row per partition of every matched topic, with the columns of PLAN_COLUMNS."""
    return plan_frames(offsets, partitions, topics, groups, policy, now_ms).plan


@dataclass(frozen=True)
class PlanFrames:
    plan: DataFrame  # PLAN_COLUMNS, one row per partition
    counted: DataFrame  # `group`: the counted groups that read a matched topic (the DeleteRecords' guard)


def plan_frames(
    offsets: DataFrame,
    partitions: DataFrame,
    topics: DataFrame,
    groups: DataFrame,
    policy: AnalysisPolicy,
    now_ms: int,
) -> PlanFrames:
    """The plan and the groups it counted."""
    topic_col = F.col("topic")
    matched = topics.filter(
        _matches(topic_col, policy.topics_include)
        & ~_matches(topic_col, policy.topics_exclude)
        & ~topic_col.startswith("__")  # internal topics (__consumer_offsets, ...) are never retention targets
    ).select("topic", "cleanup_policy", F.col("error").alias("topic_error"))
    matched_names = matched.select("topic")
    parts = partitions.join(F.broadcast(matched), "topic")

    cls = classify_groups(offsets, groups, policy, now_ms)
    active = cls.filter(~F.col("inactive"))

    # Who reads each matched topic: groups with a commit on it, groups subscribed/assigned to it, and
    # (for `required`) every required group whether or not it has shown up yet.
    committed_pairs = offsets.select("group", "topic").distinct()
    subscribed_pairs = cls.select("group", F.explode("snapshot_topics").alias("topic"))
    required_pairs = cls.filter("required").select("group").crossJoin(matched_names)
    readers = (
        committed_pairs.unionByName(subscribed_pairs)
        .unionByName(required_pairs)
        .distinct()
        .join(F.broadcast(matched_names), "topic")
        .join(F.broadcast(active), "group")
    )
    counted_readers = readers.filter("counted").select("group", "topic", "required")
    outsiders = (
        readers.filter(~F.col("in_include"))
        .groupBy("topic")
        .agg(F.array_sort(F.collect_set("group")).alias("outside_groups"))
    )
    # A counted group that could not be described may read any topic: hold every matched topic.
    failed_groups = cls.filter(F.col("group_error").isNotNull() & F.col("in_include")).agg(
        F.array_sort(F.collect_set("group")).alias("failed_groups")
    )

    bounds = parts.select("topic", "partition", "log_start", "high_watermark")
    # The hot path: the committed offsets (one row per group and partition, 10 M on a large cluster) meet
    # only small broadcast tables (counted groups, matched partitions), so they are never shuffled whole;
    # the aggregations below shuffle one partial row per partition and task.
    counted_groups = cls.filter("counted").select("group")
    commits = (
        offsets.select("group", "topic", "partition", "committed_offset")
        .join(F.broadcast(counted_groups), "group")
        .join(F.broadcast(bounds), ["topic", "partition"])
        .withColumn(
            "in_range",
            (F.col("committed_offset") >= F.col("log_start"))
            & (F.col("committed_offset") <= F.col("high_watermark")),
        )
    )
    agg = commits.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("n_committed"),
        F.min(F.when(F.col("in_range"), F.col("committed_offset"))).alias("min_committed"),
        F.array_sort(F.collect_set(F.when(~F.col("in_range"), F.col("group")))).alias("out_of_range"),
    )
    # The groups at the minimum are the ones that hold the disk: named so a user sees who to chase.
    at_min = (
        commits.filter("in_range")
        .join(F.broadcast(agg.select("topic", "partition", "min_committed")), ["topic", "partition"])
        .filter(F.col("committed_offset") == F.col("min_committed"))
        .groupBy("topic", "partition")
        .agg(F.array_sort(F.collect_set("group")).alias("min_groups"))
    )
    # Every counted reader of a topic must have committed on each of its partitions. Counting finds the
    # partitions that lack a commit; only those are joined against the commits to name the groups.
    reader_counts = counted_readers.groupBy("topic").agg(F.count(F.lit(1)).alias("n_readers"))
    lacking = (
        bounds.select("topic", "partition")
        .join(F.broadcast(reader_counts), "topic")
        .join(agg.select("topic", "partition", "n_committed"), ["topic", "partition"], "left")
        .filter(F.col("n_readers") > F.coalesce(F.col("n_committed"), F.lit(0)))
        .select("topic", "partition")
    )
    missing = (
        counted_readers.join(lacking, "topic")
        .join(
            commits.join(lacking, ["topic", "partition"], "left_semi").select("group", "topic", "partition"),
            ["group", "topic", "partition"],
            "left_anti",
        )
        .groupBy("topic", "partition")
        .agg(
            F.array_sort(F.collect_set("group")).alias("missing"),
            F.array_sort(F.collect_set(F.when(F.col("required"), F.col("group")))).alias("missing_required"),
        )
    )

    plan = (
        parts.join(agg, ["topic", "partition"], "left")
        .join(F.broadcast(reader_counts), "topic", "left")
        .join(missing, ["topic", "partition"], "left")
        .join(at_min, ["topic", "partition"], "left")
        .join(F.broadcast(outsiders), "topic", "left")
        .crossJoin(F.broadcast(failed_groups))
    )
    counted = counted_readers.select("group").distinct()
    return PlanFrames(_decide(plan, policy).select(*PLAN_COLUMNS), counted)


def _decide(plan: DataFrame, policy: AnalysisPolicy) -> DataFrame:
    c = F.col
    empty = F.array().cast("array<string>")
    nonempty = lambda name: F.size(F.coalesce(c(name), empty)) > 0  # noqa: E731
    lookup_error = F.coalesce(c("topic_error"), c("error"))
    deletes = F.array_contains(
        F.split(F.regexp_replace(F.lower(c("cleanup_policy")), r"\s", ""), ","), "delete"
    )
    # Spark's least() skips nulls; the cut is only taken when every input is known (checked above it).
    cut = F.least(c("min_committed"), c("time_offset"), c("high_watermark"))
    limited_by_consumers = c("min_committed") < c("time_offset")
    held = [
        (lookup_error.isNotNull() | c("time_offset").isNull(), LOOKUP_FAILED, empty),
        (~F.coalesce(deletes, F.lit(False)), CLEANUP_POLICY_COMPACT, empty),
        (F.lit(policy.exclusive) & nonempty("outside_groups"), READ_BY_EXCLUDED_GROUP, c("outside_groups")),
        (nonempty("failed_groups"), LOOKUP_FAILED, c("failed_groups")),
        (nonempty("missing_required"), REQUIRED_GROUP_NOT_COMMITTED, c("missing_required")),
        (nonempty("missing"), NO_COMMITTED_OFFSET, c("missing")),
        (nonempty("out_of_range"), OFFSET_OUT_OF_RANGE, c("out_of_range")),
        (F.coalesce(c("n_readers"), F.lit(0)) == 0, NO_COUNTED_CONSUMERS, empty),
    ]
    reason: Any = F
    blocking: Any = F
    is_held: Column = F.lit(False)
    for cond, why, who in held:
        reason = reason.when(cond & ~is_held, F.lit(why))
        blocking = blocking.when(cond & ~is_held, who)
        is_held = is_held | cond
    free_reason = F.when(limited_by_consumers, F.lit(LIMITED_BY_CONSUMERS)).otherwise(
        F.lit(LIMITED_BY_RETENTION)
    )
    free_blocking = F.when(limited_by_consumers, c("min_groups")).otherwise(empty)
    blocking = blocking.otherwise(free_blocking)
    not_deletable = lookup_error.isNull() & c("time_offset").isNotNull() & ~F.coalesce(deletes, F.lit(False))
    status = (
        F.when(not_deletable, F.lit(NOT_DELETABLE))
        .when(is_held, F.lit(HELD))
        .when(cut > c("log_start"), F.lit(DELETABLE))
        .otherwise(F.lit(UP_TO_DATE))
    )
    span = c("high_watermark") - c("log_start")
    records = F.when(c("status") == DELETABLE, c("delete_before") - c("log_start")).otherwise(F.lit(0))
    # Bytes: the partition's on-disk size spread evenly over its readable offsets (DescribeLogDirs gives no
    # per-offset sizes). Compacted gaps and a partly deleted first segment make this an estimate.
    est_bytes = F.when(
        (c("records") > 0) & (span > 0), (c("size_bytes") * c("records") / span).cast("long")
    ).otherwise(F.lit(0))
    # How far the slowest counted group lags the high watermark: what it holds on disk.
    lag = F.when(c("min_committed").isNotNull(), c("high_watermark") - c("min_committed")).otherwise(F.lit(0))
    lag_bytes = F.when(
        (c("lag_records") > 0) & (span > 0), (c("size_bytes") * c("lag_records") / span).cast("long")
    )
    return (
        plan.withColumn("status", status)
        .withColumn("lag_records", F.greatest(lag, F.lit(0)).cast("long"))
        .withColumn("lag_bytes", F.coalesce(lag_bytes, F.lit(0)).cast("long"))
        .withColumn("reason", F.when(c("status") == UP_TO_DATE, F.lit(NOTHING_TO_DELETE)).otherwise(reason))
        .withColumn("limited_by", F.when(~is_held, free_reason))
        .withColumn("blocking_groups", F.coalesce(blocking, empty))
        .withColumn("delete_before", F.when(c("status") == DELETABLE, cut))
        .withColumn("records", records.cast("long"))
        .withColumn("bytes", F.coalesce(est_bytes, F.lit(0)).cast("long"))
    )


MAX_LIMITING_PER_TOPIC = 10


@dataclass
class PlanResult:
    """The collected plan: the summary and per-topic list for the policy status, the partitions to delete,
    and the counted groups (the DeleteRecords' ConsumedBy guard)."""

    summary: PlanSummary
    topics: list[TopicPlan]
    partitions: list[PartitionPlan]
    deletes: list[PartitionOffset]
    counted_groups: list[str] = field(default_factory=list)


def summarize(frames: PlanFrames | DataFrame, max_held_per_topic: int = 100) -> PlanResult:
    """Collect the plan (one row per partition: small next to the offsets) into the shared plan models."""
    plan = frames.plan if isinstance(frames, PlanFrames) else frames
    partitions: list[PartitionPlan] = []
    topics: dict[str, TopicPlan] = {}
    limiting: dict[str, dict[str, LimitingGroup]] = {}
    deletes: list[PartitionOffset] = []
    for r in plan.orderBy("topic", "partition").toLocalIterator():
        reason = HoldReason(r.reason) if r.reason is not None else None
        partitions.append(
            PartitionPlan(
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
                        partition=r.partition, reason=reason, blocking_groups=list(r.blocking_groups)
                    )
                )
        if r.limited_by == LIMITED_BY_CONSUMERS or reason is HoldReason.NOTHING_TO_DELETE:
            for g in r.blocking_groups:
                entry = limiting.setdefault(r.topic, {}).setdefault(g, LimitingGroup(group=g))
                entry.partitions += 1
                entry.lag_records += r.lag_records
                entry.lag_bytes += r.lag_bytes
        if r.status == DELETABLE:
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
    counted = sorted(r.group for r in frames.counted.collect()) if isinstance(frames, PlanFrames) else []
    return PlanResult(summary, list(topics.values()), partitions, deletes, counted)
