"""One RetentionPolicy's run loop: the schedule, one run at a time, and what a run does.

A kopf daemon per policy drives `PolicyRunner.loop`, so runs of one policy never overlap. Each run:
checks the namespace's grant (nothing is sent to Kafka when it refuses), applies `forcedRetention`
(KIP-68's forced level; a dry run only reports it), runs the analysis job through an engine, creates
the run's DeleteRecords from the plan (guard ConsumedBy: the groups the plan counted, whose commits the
DeleteRecords handler reads again just before deleting) and follows it to its end. A dry run creates
nothing and writes nothing to Kafka. A failed run backs off exponentially (capped at the interval).
The daemon is the only writer of the policy's status: it keeps its own copy rather than re-reading
the live body, whose status lags its patches until the watch event arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import kube, metrics
from ebb_operator.access import Forbidden
from ebb_operator.handlers import cluster
from ebb_operator.handlers.errors import DeleteFailed
from ebb_operator.handlers.retention.budget import PolicyBudget
from ebb_operator.handlers.retention.engines import (
    AnalysisEngine,
    LocalEngine,
    SparkApplicationEngine,
    run_name,
)
from ebb_operator.handlers.retention.forced import ForcedRetention, apply_forced_retention
from ebb_operator.handlers.retention.history import DELETE_RECORDS, outstanding_delete, prune
from ebb_operator.handlers.runtime import Runtime
from ebb_operator.handlers.status import StatusWriter
from ebb_operator.models.common import ConditionStatus, now_rfc3339, parse_duration, set_condition
from ebb_operator.models.delete_records import (
    TERMINAL_PHASES,
    DeleteRecordsSpec,
    DeleteRecordsStatus,
    EvictedGroups,
    Guard,
    Phase,
)
from ebb_operator.models.messages import EVENT_MESSAGE, PROGRESS_MESSAGE, bounded
from ebb_operator.models.plan import PlanSummary
from ebb_operator.models.reasons import Reason
from ebb_operator.models.retention_policy import (
    CRD,
    Engine,
    LastRun,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    RunOutcome,
    RunProgress,
)
from ebb_operator.models.run import PolicyRef, RunPlan, RunRequest
from ebb_operator.models.unread import UnreadCounted

RESOURCE = kube.Resource.ebb(CRD.plural, CRD.kind)
KIND = CRD.kind
log = logging.getLogger(__name__)
# The status lists at most this many topics (the CRD bounds the list, models/retention_policy.py).
MAX_STATUS_TOPICS = 100
MEMORY_KEY = "emptySince.json"  # in ConfigMap <policy>-groups: group -> ms it was first seen empty


def _render(status: RetentionPolicyStatus) -> dict[str, Any]:
    body = status.to_k8s()
    # A merge patch merges nested maps: send every key of the runs so a previous run's fields go.
    for key, run in (("lastRun", status.last_run), ("lastCompletedRun", status.last_completed_run)):
        if run is not None:
            body[key] = run.model_dump(by_alias=True, mode="json")
    # ...and the budget whole, or null when the policy has none left (its quota list must shrink).
    body["budget"] = status.budget.model_dump(by_alias=True, mode="json") if status.budget else None
    return body


def _seconds(timestamp: str) -> float:
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def due_in(
    status: RetentionPolicyStatus, spec: RetentionPolicySpec, now: float | None = None, backoff: float = 10.0
) -> float:
    """Seconds until the next run: the interval after the last run started, or after a failed run a
    backoff of `backoff` seconds doubling per failure in a row (never longer than the interval)."""
    last = status.last_run
    if last is None or last.started_at is None:
        return 0.0
    if last.outcome is RunOutcome.RUNNING:
        return 0.0  # interrupted by an operator restart: resume or redo it now
    now = time.time() if now is None else now
    interval = parse_duration(spec.schedule.interval).total_seconds()
    if status.failures > 0 and last.completed_at is not None:
        wait = min(interval, backoff * 2 ** (status.failures - 1))
        return max(0.0, _seconds(last.completed_at) + wait - now)
    return max(0.0, _seconds(last.started_at) + interval - now)


def describe(progress: RunProgress) -> str:
    """A run's progress in a line, for the policy's Ready message: `RUNNING, 2 executors, the plan: 37/40
    tasks`."""
    parts = [progress.state or "NEW"]
    if progress.executors:
        parts.append(f"{progress.executors} executor{'s' if progress.executors != 1 else ''}")
    if progress.stage:
        tasks = f": {progress.tasks_done}/{progress.tasks_total} tasks" if progress.tasks_total else ""
        parts.append(f"{progress.stage}{tasks}")
    return ", ".join(parts)


def delete_records_object(
    policy: kopf.Body, spec: RetentionPolicySpec, plan: RunPlan, owner: dict[str, Any], labels: dict[str, str]
) -> dict[str, Any]:
    """The run's DeleteRecords: the plan's cuts, guarded by the groups the plan counted, except where the
    budget evicted some of them (`evicted`: those groups on those partitions only)."""
    guard = Guard.CONSUMED_BY if plan.counted_groups else Guard.CONSUMED
    evicted = [
        EvictedGroups(topic=e.topic, partition=e.partition, groups=[g.group for g in e.groups])
        for e in plan.evictions
    ]
    dr = DeleteRecordsSpec(
        cluster_ref=spec.cluster_ref,
        cluster=spec.cluster,
        partitions=plan.deletes,
        guard=guard,
        consumed_by=plan.counted_groups,
        evicted=evicted if guard is Guard.CONSUMED_BY else [],
    )
    return {
        "apiVersion": DELETE_RECORDS.api_version,
        "kind": DELETE_RECORDS.kind,
        "metadata": {
            "name": f"{policy.metadata.name}-{plan.run_id}"[:253],
            "namespace": policy.metadata.namespace,
            "labels": labels,
            "ownerReferences": [owner],
        },
        "spec": dr.to_k8s(),
    }


class PolicyRunner:
    def __init__(self, rt: Runtime, body: kopf.Body) -> None:
        self.rt = rt
        self.body = body  # kopf's live view: spec and generation are always the latest
        status = RetentionPolicyStatus.model_validate(dict(body.get("status") or {}))
        self.out = StatusWriter(body, RESOURCE, status, render=_render)
        self.namespace = body.metadata.namespace or ""
        self.name = body.metadata.name or ""
        self.labels = {kube.POLICY_LABEL: self.name[:63]}
        self._plan: RunPlan | None = None  # the current run's plan, once the analysis handed it back
        self._limiting: set[tuple[str, str]] = set()  # (topic, group) series of the limiting-lag gauges
        self.budget = PolicyBudget(rt, self.out)  # spec.budget: its condition, Events and client quotas
        self._uncounted: list[UnreadCounted] = []  # unread loss recorded in status, not yet in the counter

    @property
    def status(self) -> RetentionPolicyStatus:
        return self.out.status

    @property
    def owner(self) -> dict[str, Any]:
        return kube.owner_reference(RESOURCE, self.name, str(self.body.metadata.uid))

    async def loop(self, stopped: kopf.DaemonStopped) -> None:
        poll = self.rt.settings.poll_seconds
        ran_generation: int | None = None
        waiting_for: str | None = None
        while not stopped:
            try:
                spec = RetentionPolicySpec.model_validate(dict(self.body.spec))
            except ValidationError as exc:
                if self.status.observed_generation != self.out.generation:
                    await self.out.failed(exc)
                await stopped.wait(poll)
                continue
            if spec.suspend:
                ready = next((c for c in self.status.conditions if c.type == "Ready"), None)
                if (
                    ready is None
                    or ready.reason != Reason.SUSPENDED
                    or self.status.observed_generation != self.out.generation
                ):
                    await self.out.write(
                        ConditionStatus.TRUE, Reason.SUSPENDED, "spec.suspend is true: no runs"
                    )
                await stopped.wait(poll)
                continue
            # A changed spec (dryRun flipped, topics edited) runs now rather than at the next interval,
            # also one changed while no operator ran (a restart: the status says which generation it saw).
            seen = ran_generation if ran_generation is not None else self.status.observed_generation
            changed = seen is not None and seen != self.out.generation
            wait = (
                0.0 if changed else due_in(self.status, spec, backoff=self.rt.settings.retry_backoff_seconds)
            )
            if wait > 0:
                await stopped.wait(min(poll, wait))
                continue
            try:
                outstanding = await asyncio.to_thread(outstanding_delete, self.namespace, self.name)
            except kube.KubeApiError as exc:  # the API server is unreachable for a moment: run nothing
                log.warning("%s/%s: cannot list its DeleteRecords: %s", self.namespace, self.name, exc)
                await stopped.wait(poll)
                continue
            if outstanding is not None:
                if outstanding != waiting_for:
                    log.info("%s/%s waits for DeleteRecords %s", self.namespace, self.name, outstanding)
                    waiting_for = outstanding
                await stopped.wait(poll)
                continue
            ran_generation = self.out.generation
            await self.run(spec)
            spark = spec.analysis.engine is Engine.SPARK_APPLICATION
            jobs = self.rt.settings.job_namespace if spark else None
            with contextlib.suppress(kube.KubeApiError):
                await asyncio.to_thread(prune, self.namespace, self.name, self.uid, spec.history_limit, jobs)

    @property
    def uid(self) -> str:
        return str(self.body.metadata.uid)

    async def _engine(self, spec: RetentionPolicySpec, last: LastRun) -> AnalysisEngine:
        if spec.analysis.engine is Engine.LOCAL:

            async def waiting(message: str) -> None:
                message = f"run {last.id} (Local): {message}"
                await self.out.write(ConditionStatus.UNKNOWN, Reason.RUNNING, message)

            label = f"{self.namespace}/{self.name}"
            return LocalEngine(label, self.rt.settings, self.rt.local_analysis_slots, waiting)
        # Where the run lives, recorded before anything is created there: the tenant follows it by name,
        # and an operator that restarts resumes it there.
        last.spark_application = run_name(self._policy_ref, last.id)
        last.spark_application_namespace = last.spark_application_namespace or self.rt.settings.job_namespace
        where = f"SparkApplication {last.spark_application_namespace}/{last.spark_application}"
        await self.out.write(ConditionStatus.UNKNOWN, Reason.RUNNING, where)

        async def progress(now: RunProgress) -> None:
            last.progress = now
            await self.out.write(ConditionStatus.UNKNOWN, Reason.RUNNING, f"{where}: {describe(now)}")

        return SparkApplicationEngine(self.body, self.rt.settings, last.spark_application_namespace, progress)

    @property
    def _policy_ref(self) -> PolicyRef:
        return PolicyRef(namespace=self.namespace, name=self.name, uid=self.uid)

    @metrics.reconciles(KIND)
    async def run(self, spec: RetentionPolicySpec) -> None:
        """One run, start to finish; every outcome ends in lastRun, lastCompletedRun and Ready.

        A run cut off (an operator restart, a new leader) goes on from what it left: its DeleteRecords if it
        created one (the plan handed on), else its SparkApplication; a Local analysis starts again."""
        last = self.status.last_run
        cut_off = last if last is not None and last.outcome is RunOutcome.RUNNING else None
        handed_on = await asyncio.to_thread(self._delete_records_of, cut_off.id) if cut_off else None
        if cut_off is not None and (
            handed_on
            # (an operator before jobs namespaces ran a SparkApplication in the policy's namespace)
            or (cut_off.engine is Engine.SPARK_APPLICATION and cut_off.spark_application_namespace)
        ):
            last, run_id = cut_off, cut_off.id
            last.delete_records = handed_on
        else:
            run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            last = LastRun(
                id=run_id, started_at=now_rfc3339(), engine=spec.analysis.engine, outcome=RunOutcome.RUNNING
            )
            self.status.last_run = last
            await self.out.write(
                ConditionStatus.UNKNOWN, Reason.RUNNING, f"run {run_id} ({spec.analysis.engine.value})"
            )
        self._plan = None
        try:
            reason, message = await self._run(spec, last)
            self.status.failures = 0
        except Exception as exc:
            self._record_plan()
            self.status.failures += 1
            last.outcome = RunOutcome.FAILED
            last.completed_at = now_rfc3339()
            cause = str(exc) or type(exc).__name__
            last.message = bounded(f"run {run_id} failed: {cause}", EVENT_MESSAGE)
            self.status.last_completed_run = last
            reason = await self.out.failed(exc, message=last.message)
            self._count_unread()
            metrics.POLICY_RUNS.labels(self.namespace, self.name, RunOutcome.FAILED.value).inc()
            log.warning("%s/%s run %s failed (%s): %s", self.namespace, self.name, run_id, reason, cause)
            return
        last.message = bounded(message, EVENT_MESSAGE)
        last.completed_at = now_rfc3339()
        self._record_plan()
        self.status.last_completed_run = last
        assert last.outcome is not None
        ready = ConditionStatus.FALSE if last.outcome is RunOutcome.FAILED else ConditionStatus.TRUE
        await self.out.write(ready, reason, message)
        self._count_unread()
        metrics.POLICY_RUNS.labels(self.namespace, self.name, last.outcome.value).inc()
        if last.outcome is RunOutcome.FAILED:
            metrics.FAILURES.labels(KIND, reason).inc()

    def _matched(self, matched: bool) -> None:
        """The TopicsMatched condition: an empty match is a normal run, said so in its own condition."""
        status, reason, message = (
            (ConditionStatus.TRUE, Reason.MATCHED, "spec.topics matches topics of the cluster")
            if matched
            else (
                ConditionStatus.FALSE,
                Reason.NOTHING_MATCHED,
                "no topic of the cluster matches spec.topics",
            )
        )
        self.status.conditions = set_condition(
            self.status.conditions, "TopicsMatched", status, reason, message, self.out.generation
        )

    def _delete_records_of(self, run_id: str) -> str | None:
        """The DeleteRecords a run created (its name follows the run's id), if it exists. Blocking."""
        name = f"{self.name}-{run_id}"[:253]
        try:
            kube.get_object(kube.ObjectRef(DELETE_RECORDS, self.namespace, name))
        except kube.NotFoundError:
            return None
        return name

    async def _run(self, spec: RetentionPolicySpec, last: LastRun) -> tuple[Reason, str]:
        """(reason, message) of a run that ended; raises for one that failed."""
        if last.delete_records:  # resumed after the plan was handed on: its DeleteRecords ends the run
            return await self._deleted(last.delete_records, last, "resumed after an operator restart")
        rt = self.rt
        target = await cluster.resolve(rt, self.namespace, spec.cluster_ref, spec.cluster)
        metadata = await rt.admins.call(target.connection, lambda a: a.metadata())
        matched = await asyncio.to_thread(spec.topics.select, metadata.topics)
        # Forbidden: nothing was sent to Kafka (but quotas Ebb set for a budget no longer allowed go).
        try:
            await asyncio.to_thread(target.access.check_retention_policy, spec, matched)
        except Forbidden:
            await self.budget.lift(target)
            raise
        self._matched(bool(matched))
        if not matched:
            self._plan = RunPlan(
                policy=f"{self.namespace}/{self.name}",
                run_id=last.id,
                now_ms=0,
                summary=PlanSummary(),
                unread_ledger=self.status.unread_ledger,  # nothing seen: nothing counted, nothing forgotten
            )
            await self.budget.after_plan(spec, self._plan, target)
            last.outcome = RunOutcome.NOTHING_TO_DELETE
            return Reason.NOTHING_TO_DELETE, "no topic matches spec.topics"
        forced: ForcedRetention | None = None
        if spec.forced_retention is not None:
            forced = await rt.admins.call(
                target.connection,
                lambda a: apply_forced_retention(
                    a, matched, spec.forced_retention or "", dry_run=spec.dry_run
                ),
            )
            if forced.changes:
                reason = "ForcedRetentionDryRun" if spec.dry_run else "ForcedRetentionApplied"
                kopf.info(
                    self.body, reason=reason, message=bounded(forced.describe(spec.dry_run), EVENT_MESSAGE)
                )
                if not spec.dry_run:
                    metrics.CONFIGS_APPLIED.labels(KIND).inc(len(forced.changes))
        access = target.access
        memory = await asyncio.to_thread(self._load_empty_groups)
        connection = await cluster.analysis_connection(rt, target)
        request = RunRequest(
            policy=self._policy_ref,
            spec=spec,
            run_id=last.id,
            bootstrap_servers=connection.bootstrap_servers,
            client_properties=connection.properties,
            discountable_groups=None if access.unrestricted or access.groups is None else list(access.groups),
            empty_since=memory,
            unread_ledger=self.status.unread_ledger,
        )
        plan = await (await self._engine(spec, last)).run(request)
        await asyncio.to_thread(self._save_empty_groups, plan.empty_since)
        self._plan = plan  # recorded with the run's outcome: status shows one run's plan and outcome
        budget = await self.budget.after_plan(spec, plan, target)
        summary = plan.summary
        held = f"{summary.held_partitions} partitions held"
        forced_note = f"; {forced.describe(spec.dry_run)}" if forced and forced.changes else ""
        forced_note += f"; budget: {budget}" if budget else ""
        if spec.dry_run:
            last.outcome = RunOutcome.SUCCEEDED
            message = (
                f"dry run: would delete {summary.deletable_records} records "
                f"({summary.reclaimable_bytes} bytes) in {len(plan.deletes)} partitions; {held}{forced_note}"
            )
            kopf.info(self.body, reason="DryRun", message=bounded(message, EVENT_MESSAGE))
            return Reason.DRY_RUN, message
        if not plan.deletes:
            last.outcome = RunOutcome.HELD if summary.held_partitions else RunOutcome.NOTHING_TO_DELETE
            reason = Reason.HELD if summary.held_partitions else Reason.NOTHING_TO_DELETE
            return reason, f"nothing to delete; {held}{forced_note}"
        return await self._delete(spec, plan, last, held + forced_note)

    async def _delete(
        self, spec: RetentionPolicySpec, plan: RunPlan, last: LastRun, note: str
    ) -> tuple[Reason, str]:
        labels = {**self.labels, kube.RUN_LABEL: plan.run_id[:63]}
        body = delete_records_object(self.body, spec, plan, self.owner, labels)
        name = body["metadata"]["name"]
        last.delete_records = name
        with contextlib.suppress(kube.AlreadyExistsError):  # created before an operator restart
            await asyncio.to_thread(kube.create_object, DELETE_RECORDS, self.namespace, body)
        return await self._deleted(name, last, f"plan: {plan.summary.reclaimable_bytes} bytes; {note}")

    async def _deleted(self, name: str, last: LastRun, note: str) -> tuple[Reason, str]:
        """Follow the run's DeleteRecords to its end: the run's outcome."""
        await self.out.write(ConditionStatus.UNKNOWN, Reason.DELETING, f"waiting for DeleteRecords {name}")
        done = await self._follow(name)
        if self._plan is not None:
            self.budget.count_evicted(self._plan, done)
        if done.phase is Phase.SUCCEEDED:
            last.outcome = RunOutcome.SUCCEEDED
            message = f"deleted {done.deleted_records or 0} records via DeleteRecords {name} ({note})"
            kopf.info(self.body, reason="RecordsDeleted", message=bounded(message, EVENT_MESSAGE))
            return Reason.SUCCEEDED, message
        ready = next((c for c in done.conditions if c.type == "Ready"), None)
        raise DeleteFailed(f"DeleteRecords {name}: {ready.message if ready else done.phase}")

    async def _follow(self, name: str) -> DeleteRecordsStatus:
        """Wait for the run's DeleteRecords (executed by handlers/delete_records.py) to finish, its
        progress shown in the policy's Ready message meanwhile: a cut that waits (KIP-107: a follower
        that does not fetch times DeleteRecords out until it is back) says so on the policy too."""
        ref = kube.ObjectRef(DELETE_RECORDS, self.namespace, name)
        shown: str | None = None
        while True:
            obj = await asyncio.to_thread(kube.get_object, ref)
            status = DeleteRecordsStatus.model_validate(dict(obj.get("status") or {}))
            if status.phase in TERMINAL_PHASES:
                return status
            ready = next((c for c in status.conditions if c.type == "Ready"), None)
            if ready is not None and ready.message and ready.message != shown:
                shown = ready.message
                message = f"waiting for DeleteRecords {name} ({status.phase}): {ready.message}"
                await self.out.write(
                    ConditionStatus.UNKNOWN, Reason.DELETING, bounded(message, PROGRESS_MESSAGE)
                )
            await asyncio.sleep(self.rt.settings.poll_seconds)

    @property
    def _memory_name(self) -> str:
        return f"{self.name}-groups"[:253]

    def _load_empty_groups(self) -> dict[str, int]:
        """When each group was first seen empty, across runs (OffsetFetch has no commit times: this is
        how long an empty group has been inactive). Lost memory is safe: groups count again until seen
        empty for inactiveAfter anew."""
        try:
            data = kube.read_config_map_data(self.namespace, self._memory_name)
            return {str(k): int(v) for k, v in json.loads(data.get(MEMORY_KEY, "{}")).items()}
        except (kube.KubeApiError, ValueError):
            return {}

    def _save_empty_groups(self, empty_since: dict[str, int]) -> None:
        data = {MEMORY_KEY: json.dumps(empty_since, sort_keys=True)}
        kube.upsert_config_map(self.namespace, self._memory_name, data, self.labels, self.owner)

    def _record_plan(self) -> None:
        if self._plan is not None:  # (a run that failed before the analysis has none: the last stays)
            self._record(self._plan)

    def _record(self, plan: RunPlan) -> None:
        """The plan of the run that just ended into status and the policy's gauges."""
        self.status.summary = plan.summary
        self.status.topics = plan.topics[:MAX_STATUS_TOPICS]
        self.status.topic_count = len(plan.topics)
        self.status.plan_run = plan.run_id
        labels = (self.namespace, self.name)
        metrics.POLICY_RECLAIMABLE_BYTES.labels(*labels).set(plan.summary.reclaimable_bytes)
        metrics.POLICY_HELD_PARTITIONS.labels(*labels).set(plan.summary.held_partitions)
        limiting = {(t.topic, g.group): g for t in plan.topics[:MAX_STATUS_TOPICS] for g in t.limiting}
        age = metrics.POLICY_LIMITING_OLDEST_UNREAD_AGE
        for topic, group in self._limiting - limiting.keys():  # no longer limiting: its series go
            for gauge in (
                metrics.POLICY_LIMITING_LAG_RECORDS,
                metrics.POLICY_LIMITING_LAG_BYTES,
                metrics.POLICY_LIMITING_PINNED_BYTES,
                age,
            ):
                with contextlib.suppress(KeyError):
                    gauge.remove(*labels, topic, group)
        for (topic, group), g in limiting.items():
            metrics.POLICY_LIMITING_LAG_RECORDS.labels(*labels, topic, group).set(g.lag_records)
            metrics.POLICY_LIMITING_LAG_BYTES.labels(*labels, topic, group).set(g.lag_bytes)
            metrics.POLICY_LIMITING_PINNED_BYTES.labels(*labels, topic, group).set(g.pinned_bytes)
            if g.oldest_unread_age_seconds is not None:
                age.labels(*labels, topic, group).set(g.oldest_unread_age_seconds)
            else:
                with contextlib.suppress(KeyError):
                    age.remove(*labels, topic, group)
        self._limiting = set(limiting)
        self._record_unread(plan)
        held = Counter(g for t in plan.topics for p in t.held for g in p.blocking_groups)
        metrics.set_held_by_group(self.namespace, self.name, held)

    def _record_unread(self, plan: RunPlan) -> None:
        """The run's unread-loss ledger into status; what it counted waits for the status write."""
        self.status.unread_ledger = plan.unread_ledger
        self._uncounted += plan.unread_counted
        if plan.unread_deferred:
            log.warning(
                "%s/%s: the unread-loss ledger is full: loss on %d partitions is counted by a later run",
                self.namespace,
                self.name,
                plan.unread_deferred,
            )

    def _count_unread(self) -> None:
        """Once the ledger that counted it is in status: the loss into the counter, and an Event. A status
        write that failed leaves both for the next one; a process that dies before loses its counter with
        them, and the next process counts from the ledger in status: each record is counted once."""
        if not self._uncounted:
            return
        counted, self._uncounted = self._uncounted, []
        for c in counted:
            metrics.UNREAD_RECORDS_DELETED.labels(self.namespace, self.name, c.topic, c.group).inc(c.records)
        lost = "; ".join(
            f"{c.group}: {c.records} of {c.topic} (partitions {', '.join(map(str, c.partitions))})"
            for c in counted
        )
        message = (
            f"{sum(c.records for c in counted)} records left the log before counted groups read them: {lost}"
        )
        kopf.warn(self.body, reason="UnreadRecordsDeleted", message=bounded(message, EVENT_MESSAGE))
