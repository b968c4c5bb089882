"""One analysis run: read `__consumer_offsets` and the cluster snapshot, compute and collect the plan."""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ebb_operator.analysis.offsets_source import latest_commits, latest_group_metadata, read_offsets_topic
from ebb_operator.analysis.plan import PlanResult, compute_plan, summarize
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import take_snapshot
from ebb_operator.kafka import ClusterAdmin, ClusterConnection

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
        )
    )


def run_analysis(
    spark: SparkSession,
    policy: AnalysisPolicy,
    connection: ClusterConnection,
    now_ms: int,
    **source_options: str,
) -> PlanResult:
    log.info("reading __consumer_offsets from %s", connection.bootstrap_servers)
    raw = read_offsets_topic(spark, connection, **source_options).persist()
    try:
        commits = latest_commits(raw)
        stored_groups = latest_group_metadata(raw)
        log.info("taking the cluster snapshot (offsets, sizes, configs, groups)")
        with ClusterAdmin(connection) as admin:
            snapshot = take_snapshot(admin, policy, now_ms)
        partitions, topics, groups = snapshot.frames(spark)
        log.info(
            "computing the plan for %d partitions of %d topics",
            len(snapshot.partitions),
            len(snapshot.topics),
        )
        plan = compute_plan(commits, partitions, topics, merge_groups(groups, stored_groups), policy, now_ms)
        return summarize(plan)
    finally:
        raw.unpersist()
