"""One analysis run: the cluster snapshot, the committed offsets (Admin API or `__consumer_offsets`, with
share groups' start offsets), the plan, the limiting groups' oldest unread records, the unread loss."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from ebb_operator.analysis import progress
from ebb_operator.analysis.commits_admin import read_committed_offsets
from ebb_operator.analysis.decide import PlanResult, set_oldest_unread, unread_positions
from ebb_operator.analysis.offsets_source import latest_commits, latest_group_metadata, read_offsets_topic
from ebb_operator.analysis.plan import compute_plan, plan_from_offsets, prepare, share_group_commits
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import GroupState, Snapshot, empty_groups, take_snapshot
from ebb_operator.analysis.unread import Accounting, account
from ebb_operator.kafka import ClusterAdmin, ClusterConnection, TopicPartition
from ebb_operator.models.retention_policy import OffsetsSource
from ebb_operator.models.unread import UnreadAccount

log = logging.getLogger(__name__)


def merge_groups(described: Sequence[GroupState], stored: Iterable[Mapping[str, Any]]) -> list[GroupState]:
    """Groups as DescribeGroups sees them, plus what the coordinator stored of them in `__consumer_offsets`
    (latest_group_metadata rows): the topics their members subscribe to (a member may subscribe to a
    topic it has no partition of yet: it still reads the topic), and when a group stored as empty last
    changed state (empty since: the earlier of that and the operator's memory)."""
    by_name = {g.group: g for g in described}
    for row in stored:
        name: str = row["group"]
        members: int | None = row["members"]
        g = by_name.get(name) or GroupState(name, None, members, (), None, None)
        empty_since = g.empty_since
        stamp: int | None = row["state_timestamp"]
        if members == 0 and stamp is not None and not g.members:
            empty_since = stamp if empty_since is None else min(empty_since, stamp)
        topics = sorted(set(g.topics) | set(row["subscribed_topics"] or ()))
        by_name[name] = g._replace(topics=topics, empty_since=empty_since)
    return [by_name[n] for n in sorted(by_name)]


@dataclass
class RunResult:
    plan: PlanResult
    empty_since: dict[str, int]  # the operator's memory of empty groups, for the next run
    unread: Accounting = field(default_factory=lambda: Accounting([]))  # the unread-loss ledger after it


def cpu_seconds() -> float | None:
    """CPU time of this process and every live or reaped descendant (the JVM of local mode, its Python
    workers), from /proc; None where there is no /proc. On a shared machine, wall time says little."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    spent: dict[int, float] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid = int(stat.parent.name)
        parent[pid] = int(fields[1])
        spent[pid] = sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    me, total = os.getpid(), 0.0
    for pid, seconds in spent.items():
        p = pid
        while p not in (me, 0, 1) and p in parent:
            p = parent[p]
        if p == me:
            total += seconds
    return total


@contextmanager
def phase(what: str) -> Iterator[None]:
    """Log how long a phase of the run took, and its CPU seconds: where a run's time goes. The phase is
    also the run's reported stage (progress.py)."""
    progress.enter(what)
    started, cpu = time.perf_counter(), cpu_seconds()
    yield
    wall = time.perf_counter() - started
    after = cpu_seconds()
    spent = f", {after - cpu:.1f} CPU s" if after is not None and cpu is not None else ""
    log.info("%s took %.1f s%s", what, wall, spent)


def run_analysis(
    spark: SparkSession,
    policy: AnalysisPolicy,
    connection: ClusterConnection,
    now_ms: int,
    *,
    empty_since: Mapping[str, int] | None = None,
    unread_ledger: Sequence[UnreadAccount] = (),
    **source_options: str,
) -> RunResult:
    """Snapshot, commits (policy.offsets_source), plan, then how old each limiting group's oldest unread
    record is, and the unread loss since the last run (`unread_ledger`). Raises when anything the plan
    needs is unknown. The commits are read once and kept (memory, then local disk) for the plan's few reads
    of them."""
    with ClusterAdmin(connection) as admin:
        with phase(f"the snapshot of {connection.bootstrap_servers}"):
            snapshot = take_snapshot(admin, policy, now_ms, empty_since)
        log.info(
            "%d partitions of %d matched topics, %d groups",
            len(snapshot.partitions),
            len(snapshot.topics),
            len(snapshot.groups),
        )
        plan = _plan(spark, connection, snapshot, policy, now_ms, **source_options)
        with phase("the oldest unread records (Fetch)"):
            positions = unread_positions(plan.decisions)
            stamps = admin.record_timestamps({TopicPartition(*tp): o for tp, o in positions.items()})
            set_oldest_unread(plan, {(tp.topic, tp.partition): t for tp, t in stamps.items()}, now_ms)
    log_starts = {(p.topic, p.partition): p.log_start for p in snapshot.partitions}
    present = [g.group for g in snapshot.groups]
    unread = account(unread_ledger, plan.below_log_start, log_starts, plan.counted_groups, present, now_ms)
    return RunResult(plan, empty_groups(snapshot), unread)


def _plan(
    spark: SparkSession,
    connection: ClusterConnection,
    snapshot: Snapshot,
    policy: AnalysisPolicy,
    now_ms: int,
    **source_options: str,
) -> PlanResult:
    keep = StorageLevel.MEMORY_AND_DISK
    if policy.offsets_source is OffsetsSource.ADMIN_API:
        inputs = prepare(snapshot, policy, now_ms)
        commits = read_committed_offsets(spark, connection, inputs.catalog)
        if snapshot.share_offsets:
            commits = commits.unionByName(inputs.catalog.encode(share_group_commits(spark, snapshot)))
        commits = commits.persist(keep)
        try:
            with phase(f"reading the commits of {len(inputs.catalog.groups)} groups (OffsetFetch, KIP-709)"):
                log.info("%d commits on matched topics", commits.count())
            with phase("the plan"):
                return compute_plan(commits, inputs)
        finally:
            commits.unpersist()
    raw = read_offsets_topic(spark, connection, **source_options).persist(keep)
    try:
        with phase("reading __consumer_offsets"):
            log.info("%d records", raw.count())
        with phase("the plan"):
            stored = latest_group_metadata(raw).toArrow().to_pylist()
            groups = merge_groups(list(snapshot.groups), stored)
            merged = dataclasses.replace(snapshot, groups=groups)
            offsets = latest_commits(raw)
            if snapshot.share_offsets:
                offsets = offsets.unionByName(share_group_commits(spark, snapshot))
            offsets = offsets.persist(keep)
            try:
                return plan_from_offsets(offsets, merged, policy, now_ms)
            finally:
                offsets.unpersist()
    finally:
        raw.unpersist()
