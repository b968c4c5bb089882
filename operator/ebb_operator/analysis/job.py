"""One analysis run: the cluster snapshot, the committed offsets (Admin API or `__consumer_offsets`), the
plan."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ebb_operator.analysis.commits_admin import read_committed_offsets
from ebb_operator.analysis.offsets_source import latest_commits, latest_group_metadata, read_offsets_topic
from ebb_operator.analysis.plan import PlanResult, plan_frames, summarize
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import empty_groups, take_snapshot
from ebb_operator.kafka import ClusterAdmin, ClusterConnection
from ebb_operator.models.retention_policy import OffsetsSource

log = logging.getLogger(__name__)


def merge_groups(described: DataFrame, stored: DataFrame) -> DataFrame:
    """Groups as DescribeGroups sees them, plus the topics their members subscribe to as the coordinator
    stored them (a member may subscribe to a topic it has no partition of yet: it still reads the topic)."""
    empty = F.array().cast("array<string>")
    return (
        described.alias("d")
        .join(stored.alias("s"), "group", "full_outer")
        .select(
            "group",
            F.col("d.state").alias("state"),
            F.coalesce(F.col("d.members"), F.col("s.members")).alias("members"),
            F.array_sort(
                F.array_union(
                    F.coalesce(F.col("d.topics"), empty), F.coalesce(F.col("s.subscribed_topics"), empty)
                )
            ).alias("topics"),
            F.col("d.error").alias("error"),
            # Empty since: the earlier of the operator's memory and the coordinator's state change.
            F.least(
                F.col("d.empty_since"),
                F.when(F.col("s.members") == 0, F.col("s.state_timestamp")),
            ).alias("empty_since"),
        )
    )


@dataclass
class RunResult:
    plan: PlanResult
    empty_since: dict[str, int]  # the operator's memory of empty groups, for the next run


def run_analysis(
    spark: SparkSession,
    policy: AnalysisPolicy,
    connection: ClusterConnection,
    now_ms: int,
    *,
    empty_since: Mapping[str, int] | None = None,
    **source_options: str,
) -> RunResult:
    """Snapshot, commits (policy.offsets_source), plan. Raises when anything the plan needs is unknown."""
    log.info(
        "taking the cluster snapshot of %s (offsets, sizes, configs, groups)", connection.bootstrap_servers
    )
    with ClusterAdmin(connection) as admin:
        snapshot = take_snapshot(admin, policy, now_ms, empty_since)
    partitions, topics, groups = snapshot.frames(spark)
    if policy.offsets_source is OffsetsSource.ADMIN_API:
        names = [row[0] for row in snapshot.groups]
        log.info("reading the committed offsets of %d groups (OffsetFetch, KIP-709)", len(names))
        commits = read_committed_offsets(spark, connection, names).persist()
        raw = None
    else:
        log.info("reading __consumer_offsets")
        raw = read_offsets_topic(spark, connection, **source_options).persist()
        commits = latest_commits(raw)
        groups = merge_groups(groups, latest_group_metadata(raw))
    try:
        log.info(
            "computing the plan for %d partitions of %d topics",
            len(snapshot.partitions),
            len(snapshot.topics),
        )
        frames = plan_frames(commits, partitions, topics, groups, policy, now_ms)
        return RunResult(summarize(frames), empty_groups(snapshot))
    finally:
        (raw if raw is not None else commits).unpersist()
