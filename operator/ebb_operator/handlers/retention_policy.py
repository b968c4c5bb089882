"""RetentionPolicy reconciliation: KIP-68 consumed retention on a schedule.

One kopf daemon per policy runs the loop, so runs of one policy never overlap: wait until
`schedule.interval` has passed since the last run (and the policy is not suspended, and the policy's
last DeleteRecords is finished: KIP-762's one outstanding delete), apply `forcedRetention` as
`retention.ms` (KIP-68's forced level), run the analysis job (a subprocess, or a SparkApplication),
follow the DeleteRecords it created to its end, copy the plan into status, prune old DeleteRecords
beyond `historyLimit` (the test control plane runs no garbage collector, and users expect it anyway).
The operator never imports the analysis job: it talks to it through its command line and JSON output
(docs/analysis.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import kopf
from kubernetes import client
from kubernetes.client import ApiException
from pydantic import ValidationError

from ebb_operator import metrics
from ebb_operator.handlers import kube
from ebb_operator.handlers.cluster import connection_for
from ebb_operator.handlers.compaction_config import same_value
from ebb_operator.kafka import ClusterAdmin, ClusterConfigError
from ebb_operator.models.common import (
    GROUP,
    VERSION,
    ConditionStatus,
    now_rfc3339,
    parse_duration,
    set_condition,
)
from ebb_operator.models.delete_records import CRD as DR_CRD
from ebb_operator.models.delete_records import TERMINAL_PHASES, DeleteRecordsStatus
from ebb_operator.models.plan import PlanSummary, TopicPlan
from ebb_operator.models.retention_policy import (
    CRD,
    Engine,
    LastRun,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    RunOutcome,
    SparkPod,
)

KIND = CRD.kind
log = logging.getLogger(__name__)

POLICY_LABEL = "ebb.dev/retention-policy"  # set by the analysis job on its DeleteRecords
SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
# Spark operator states that end an application (spark-operator api/v1beta2 ApplicationStateType).
SPARK_TERMINAL = {"COMPLETED", "FAILED", "SUBMISSION_FAILED"}
IMAGE_ENV = "EBB_OPERATOR_IMAGE"  # the operator image, also the Spark image (operator/Dockerfile)
POLL_SECONDS = float(os.environ.get("EBB_RETENTION_POLL_SECONDS", "1"))
# Per-topic status entries: the CRD bounds the list (models/retention_policy.py).
MAX_STATUS_TOPICS = 100


class RunFailed(Exception):
    """A run ended without a plan; `reason` is the Ready condition's CamelCase reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _Policy:
    """One policy's identity and the status being built; status is written with one merge patch."""

    def __init__(self, body: kopf.Body) -> None:
        self.body = body  # kopf's live view: spec and generation are always the latest
        self.namespace = body.metadata.namespace or "default"
        self.name = body.metadata.name or ""
        self.ref = kube.ObjectRef(CRD.plural, self.namespace, self.name)
        self.status = RetentionPolicyStatus.model_validate(dict(body.get("status") or {}))

    @property
    def generation(self) -> int:
        return int(self.body.metadata.get("generation") or 1)

    async def write(self, ready: ConditionStatus, reason: str, message: str) -> None:
        self.status.conditions = set_condition(
            self.status.conditions, "Ready", ready, reason, message[:32768], self.generation
        )
        self.status.observed_generation = self.generation
        body = self.status.to_k8s()
        # A merge patch merges nested maps: send every lastRun key so a previous run's fields go.
        if self.status.last_run is not None:
            body["lastRun"] = self.status.last_run.model_dump(by_alias=True, mode="json")
        await asyncio.to_thread(kube.patch_status, self.ref, body)


def _custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube.api_client())


def owned_by(policy: _Policy) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": policy.name,
        "uid": str(policy.body.metadata.uid),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _get_object(group: str, version: str, namespace: str, plural: str, name: str) -> dict[str, Any]:
    # The kubernetes client types custom objects as `object`; the API server returns the object's JSON.
    obj = _custom().get_namespaced_custom_object(group, version, namespace, plural, name)
    return cast("dict[str, Any]", obj)


def _policy_objects(policy: _Policy, group: str, version: str, plural: str) -> list[dict[str, Any]]:
    """This policy's objects of one kind, oldest first (selected by the label the creator sets)."""
    listed = _custom().list_namespaced_custom_object(
        group, version, policy.namespace, plural, label_selector=f"{POLICY_LABEL}={policy.name[:63]}"
    )
    items = cast("list[dict[str, Any]]", cast("dict[str, Any]", listed)["items"])
    return sorted(items, key=lambda o: (o["metadata"]["creationTimestamp"], o["metadata"]["name"]))


def _dr_finished(obj: dict[str, Any]) -> bool:
    return DeleteRecordsStatus.model_validate(dict(obj.get("status") or {})).phase in TERMINAL_PHASES


def prune_candidates(
    items: list[dict[str, Any]], keep: int, finished: Callable[[dict[str, Any]], bool]
) -> list[str]:
    """Names of finished objects beyond the newest `keep` (items oldest first); unfinished ones stay."""
    done = [o for o in items if finished(o)]
    excess = len(done) - keep
    return [o["metadata"]["name"] for o in done[: max(0, excess)]]


def _prune(policy: _Policy, keep: int) -> None:
    """historyLimit: delete the oldest finished DeleteRecords and SparkApplications of the policy."""
    kinds: list[tuple[str, str, str, Callable[[dict[str, Any]], bool]]] = [
        (GROUP, VERSION, DR_CRD.plural, _dr_finished),
        (
            SPARK_GROUP,
            SPARK_VERSION,
            SPARK_PLURAL,
            lambda o: (o.get("status") or {}).get("applicationState", {}).get("state") in SPARK_TERMINAL,
        ),
    ]
    for group, version, plural, finished in kinds:
        try:
            items = _policy_objects(policy, group, version, plural)
        except ApiException as exc:
            if exc.status == 404 and group == SPARK_GROUP:
                continue  # no Spark operator CRD installed: nothing of that kind to prune
            raise
        for name in prune_candidates(items, keep, finished):
            with contextlib.suppress(ApiException):
                _custom().delete_namespaced_custom_object(group, version, policy.namespace, plural, name)
                log.info("pruned %s %s/%s (historyLimit %d)", plural, policy.namespace, name, keep)


def _outstanding_delete(policy: _Policy) -> str | None:
    """The policy's DeleteRecords that has not finished, if any (one outstanding delete, KIP-762)."""
    for obj in _policy_objects(policy, GROUP, VERSION, DR_CRD.plural):
        if not _dr_finished(obj):
            return str(obj["metadata"]["name"])
    return None


async def _apply_forced_retention(policy: _Policy, spec: RetentionPolicySpec) -> None:
    """KIP-68's forced level: retention.ms on every matched topic, SET only where it differs."""
    if spec.forced_retention is None:
        return
    value = str(int(parse_duration(spec.forced_retention).total_seconds() * 1000))
    connection = await connection_for(spec.cluster, policy.namespace)
    admin = ClusterAdmin(connection)
    try:
        metadata = await asyncio.to_thread(admin.metadata)
        topics = sorted(t for t in metadata.topics if spec.topics.matches(t))
        described = await asyncio.to_thread(admin.topic_configs, topics)
        changes: dict[str, dict[str, str]] = {}
        for topic in topics:
            found = described[topic]
            if found.error is not None:
                raise RunFailed("KafkaError", f"cannot describe {topic}: {found.error}")
            current = found.configs["retention.ms"].value if "retention.ms" in found.configs else None
            if not same_value("retention.ms", current, value):
                changes[topic] = {"retention.ms": value}
        outcomes = await asyncio.to_thread(admin.set_topic_configs, changes)
    finally:
        admin.close()
    failed = {t: f for t, f in outcomes.items() if f is not None}
    applied = sorted(set(changes) - set(failed))
    if applied:
        metrics.CONFIGS_APPLIED.labels(KIND).inc(len(applied))
        kopf.info(
            policy.body,
            reason="ForcedRetentionApplied",
            message=f"retention.ms={value} on {', '.join(applied)}"[:1024],
        )
    if failed:
        topic, failure = next(iter(sorted(failed.items())))
        raise RunFailed("KafkaError", f"cannot set retention.ms on {topic}: {failure}")


async def _run_local(policy: _Policy, run_id: str) -> dict[str, Any]:
    """`python -m ebb_operator.analysis` in a subprocess; its log lines go to the operator log."""
    with tempfile.TemporaryDirectory(prefix="ebb-analysis-") as tmp:
        output = Path(tmp) / "plan.json"
        argv = [
            sys.executable, "-m", "ebb_operator.analysis",
            "--policy", f"{policy.namespace}/{policy.name}",
            "--run-id", run_id,
            "--output", str(output),
        ]  # fmt: skip
        log.info("run %s of %s/%s: %s", run_id, policy.namespace, policy.name, " ".join(argv[1:]))
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        last = ""
        try:
            assert proc.stdout is not None
            async for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip()
                if line:
                    last = line
                    log.info("[analysis %s/%s %s] %s", policy.namespace, policy.name, run_id, line)
            code = await proc.wait()
        finally:
            if proc.returncode is None:  # cancelled (operator stopping): leave no job behind
                proc.kill()
                await proc.wait()
        if code != 0:
            raise RunFailed("AnalysisFailed", f"analysis job exited {code}: {last}")
        result: dict[str, Any] = json.loads(output.read_text())
        return result


def _main_file() -> str:
    """The analysis job's main file inside the image, found without importing it (the operator image
    is also the Spark image, so the path is the same in the driver)."""
    spec = importlib.util.find_spec("ebb_operator.analysis.__main__")
    if spec is None or spec.origin is None:
        raise RunFailed("AnalysisFailed", "ebb_operator.analysis is not installed in the operator image")
    return f"local://{spec.origin}"


def _pod(pod: SparkPod | None, service_account: str | None, executor: bool) -> dict[str, Any]:
    pod = pod or SparkPod()
    out: dict[str, Any] = {"cores": pod.cores, "memory": pod.memory}
    if executor:
        out["instances"] = pod.instances or 1
    if service_account:
        out["serviceAccount"] = service_account
    return out


def spark_application(
    policy_name: str, namespace: str, owner: dict[str, Any], run_id: str, spec: RetentionPolicySpec
) -> dict[str, Any]:
    """The SparkApplication of one run: the analysis job's main file, type Python, from the policy."""
    app = spec.analysis.spark_application
    image = (app.image if app else None) or os.environ.get(IMAGE_ENV)
    if not image:
        raise RunFailed(
            "InvalidSpec",
            f"spec.analysis.sparkApplication.image is unset and the operator has no {IMAGE_ENV}",
        )
    name = f"{policy_name}-{run_id}"[:63].rstrip("-")
    account = app.service_account if app else None
    return {
        "apiVersion": f"{SPARK_GROUP}/{SPARK_VERSION}",
        "kind": "SparkApplication",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {POLICY_LABEL: policy_name[:63], "ebb.dev/run-id": run_id},
            "ownerReferences": [owner],
        },
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "mainApplicationFile": _main_file(),
            "arguments": [
                "--policy",
                f"{namespace}/{policy_name}",
                "--run-id",
                run_id,
                "--report-configmap",
                name,
            ],
            "sparkVersion": importlib.metadata.version("pyspark"),
            "restartPolicy": {"type": "Never"},
            "driver": _pod(app.driver if app else None, account, executor=False),
            "executor": _pod(app.executor if app else None, account, executor=True),
        },
    }


async def _run_spark_application(policy: _Policy, run_id: str, spec: RetentionPolicySpec) -> dict[str, Any]:
    """Create the SparkApplication (or find it again after a restart) and follow its state."""
    body = spark_application(policy.name, policy.namespace, owned_by(policy), run_id, spec)
    name = body["metadata"]["name"]
    if policy.status.last_run is not None:
        policy.status.last_run.spark_application = name
    try:
        await asyncio.to_thread(
            _custom().create_namespaced_custom_object,
            SPARK_GROUP, SPARK_VERSION, policy.namespace, SPARK_PLURAL, body,
        )  # fmt: skip
        kopf.info(policy.body, reason="SparkApplicationCreated", message=f"SparkApplication {name}")
    except ApiException as exc:
        if exc.status != 409:
            raise RunFailed(
                "SparkApplicationFailed", f"cannot create SparkApplication {name}: {exc.reason}"
            ) from exc
    seen = None
    while True:
        obj: dict[str, Any] = await asyncio.to_thread(
            _get_object,
            SPARK_GROUP,
            SPARK_VERSION,
            policy.namespace,
            SPARK_PLURAL,
            name,
        )
        state_info = (obj.get("status") or {}).get("applicationState") or {}
        state = state_info.get("state") or "NEW"
        if state != seen:
            log.info(
                "run %s of %s/%s: SparkApplication %s is %s",
                run_id,
                policy.namespace,
                policy.name,
                name,
                state,
            )
            seen = state
        if state == "COMPLETED":
            break
        if state in SPARK_TERMINAL:
            raise RunFailed(
                "SparkApplicationFailed",
                f"SparkApplication {name} {state}: {state_info.get('errorMessage', '')}",
            )
        await asyncio.sleep(POLL_SECONDS)
    core = client.CoreV1Api(kube.api_client())
    try:
        cm = await asyncio.to_thread(core.read_namespaced_config_map, name, policy.namespace)
    except ApiException as exc:
        raise RunFailed(
            "AnalysisFailed", f"SparkApplication {name} completed without its plan ConfigMap"
        ) from exc
    with contextlib.suppress(ApiException):
        await asyncio.to_thread(core.delete_namespaced_config_map, name, policy.namespace)
    result: dict[str, Any] = json.loads((cm.data or {})["plan.json"])
    return result


async def _follow_delete(policy: _Policy, name: str) -> DeleteRecordsStatus:
    """Wait for the run's DeleteRecords (executed by handlers/delete_records.py) to finish."""
    while True:
        obj = await asyncio.to_thread(_get_object, GROUP, VERSION, policy.namespace, DR_CRD.plural, name)
        status = DeleteRecordsStatus.model_validate(dict(obj.get("status") or {}))
        if status.phase in TERMINAL_PHASES:
            return status
        await asyncio.sleep(POLL_SECONDS)


def _record_plan(policy: _Policy, plan: dict[str, Any]) -> None:
    summary = PlanSummary.model_validate(plan.get("summary") or {})
    topics = [TopicPlan.model_validate(t) for t in plan.get("topics") or []]
    policy.status.summary = summary
    policy.status.topics = topics[:MAX_STATUS_TOPICS]
    labels = (policy.namespace, policy.name)
    metrics.POLICY_RECLAIMABLE_BYTES.labels(*labels).set(summary.reclaimable_bytes)
    metrics.POLICY_HELD_PARTITIONS.labels(*labels).set(summary.held_partitions)


async def _run(policy: _Policy, spec: RetentionPolicySpec) -> None:
    """One run, start to finish; every outcome ends in lastRun and the Ready condition."""
    last = policy.status.last_run
    if last is not None and last.outcome is RunOutcome.RUNNING and last.engine is Engine.SPARK_APPLICATION:
        run_id = last.id  # the operator restarted mid-run: follow the same SparkApplication
    else:
        run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        last = LastRun(
            id=run_id, started_at=now_rfc3339(), engine=spec.analysis.engine, outcome=RunOutcome.RUNNING
        )
        policy.status.last_run = last
        await policy.write(ConditionStatus.UNKNOWN, "Running", f"run {run_id} ({spec.analysis.engine.value})")
    metrics.RECONCILES.labels(KIND).inc()
    try:
        await _apply_forced_retention(policy, spec)
        if spec.analysis.engine is Engine.LOCAL:
            plan = await _run_local(policy, run_id)
        else:
            plan = await _run_spark_application(policy, run_id, spec)
        _record_plan(policy, plan)
        last.delete_records = plan.get("deleteRecords")
        summary = policy.status.summary or PlanSummary()
        held = f"{summary.held_partitions} partitions held"
        if last.delete_records is None:
            last.outcome, reason = RunOutcome.NOTHING_TO_DELETE, "NothingToDelete"
            message = f"nothing to delete; {held}"
        else:
            await policy.write(
                ConditionStatus.UNKNOWN, "Deleting", f"waiting for DeleteRecords {last.delete_records}"
            )
            done = await _follow_delete(policy, last.delete_records)
            ready = next((c for c in done.conditions if c.type == "Ready"), None)
            if done.phase is not None and done.phase.value == "Succeeded":
                last.outcome = RunOutcome.SUCCEEDED
                reason = "DryRun" if spec.dry_run else "Succeeded"
                verb = "would delete" if spec.dry_run else "deleted"
                message = (
                    f"{verb} {done.deleted_records or 0} records "
                    f"(plan: {summary.reclaimable_bytes} bytes) "
                    f"via DeleteRecords {last.delete_records}; {held}"
                )
                kopf.info(policy.body, reason="DryRun" if spec.dry_run else "RecordsDeleted", message=message)
            else:
                last.outcome, reason = RunOutcome.FAILED, "DeleteFailed"
                message = f"DeleteRecords {last.delete_records}: {ready.message if ready else done.phase}"
                kopf.warn(policy.body, reason="DeleteFailed", message=message[:1024])
        last.message = message
        last.completed_at = now_rfc3339()
        await policy.write(
            ConditionStatus.TRUE if last.outcome is not RunOutcome.FAILED else ConditionStatus.FALSE,
            reason,
            message,
        )
        if last.outcome is RunOutcome.FAILED:
            metrics.FAILURES.labels(KIND, reason).inc()
    except (RunFailed, ClusterConfigError, ApiException, OSError, ValueError, ValidationError) as exc:
        reason = _reason(exc)
        message = f"run {run_id} failed: {exc}"
        last.outcome, last.completed_at, last.message = RunOutcome.FAILED, now_rfc3339(), message[:1024]
        await policy.write(ConditionStatus.FALSE, reason, message)
        kopf.warn(policy.body, reason=reason, message=message[:1024])
        metrics.FAILURES.labels(KIND, reason).inc()
    except Exception as exc:  # a Kafka lookup raised: the run failed, nothing was deleted by it
        message = f"run {run_id} failed: {exc}"
        last.outcome, last.completed_at, last.message = RunOutcome.FAILED, now_rfc3339(), message[:1024]
        await policy.write(ConditionStatus.FALSE, "KafkaError", message)
        metrics.FAILURES.labels(KIND, "KafkaError").inc()


def _reason(exc: Exception) -> str:
    """One CamelCase Ready reason per failure class."""
    if isinstance(exc, RunFailed):
        return exc.reason
    if isinstance(exc, ClusterConfigError):
        return "ClusterUnreachable"
    if isinstance(exc, ApiException):
        return "KubernetesApiError"
    return "AnalysisFailed"  # the job could not be started, or its plan output is unreadable


def _due_in(status: RetentionPolicyStatus, spec: RetentionPolicySpec) -> float:
    """Seconds until the next run: schedule.interval after the last run started (0 = now)."""
    last = status.last_run
    if last is None or last.started_at is None:
        return 0.0
    if last.outcome is RunOutcome.RUNNING:
        return 0.0  # interrupted by an operator restart: resume or redo it now
    started = datetime.strptime(last.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    return max(0.0, started + parse_duration(spec.schedule.interval).total_seconds() - time.time())


@kopf.daemon(GROUP, VERSION, CRD.plural, id="retentionpolicy-runner", cancellation_timeout=30)
async def retentionpolicy_runner(body: kopf.Body, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """The policy's run loop: one daemon per policy is what makes its runs one at a time."""
    waiting_for: str | None = None
    ran_generation: int | None = None
    # The daemon is the only writer of this status: it keeps its own copy rather than re-reading the
    # live body, whose status lags our patches until the watch event arrives.
    policy = _Policy(body)
    while not stopped:
        try:
            spec = RetentionPolicySpec.model_validate(dict(body.spec))
        except ValidationError as exc:
            if policy.status.observed_generation != policy.generation:
                await policy.write(ConditionStatus.FALSE, "InvalidSpec", str(exc))
                metrics.FAILURES.labels(KIND, "InvalidSpec").inc()
            await stopped.wait(POLL_SECONDS)
            continue
        if spec.suspend:
            ready = next((c for c in policy.status.conditions if c.type == "Ready"), None)
            if (
                ready is None
                or ready.reason != "Suspended"
                or policy.status.observed_generation != policy.generation
            ):
                await policy.write(ConditionStatus.TRUE, "Suspended", "spec.suspend is true: no runs")
            await stopped.wait(POLL_SECONDS)
            continue
        # A changed spec (dryRun flipped, topics edited) runs now rather than at the next interval.
        changed = ran_generation is not None and ran_generation != policy.generation
        if not changed and _due_in(policy.status, spec) > 0:
            await stopped.wait(min(POLL_SECONDS, _due_in(policy.status, spec)))
            continue
        try:
            outstanding = await asyncio.to_thread(_outstanding_delete, policy)
        except ApiException as exc:  # the API server is unreachable for a moment: try again, run nothing
            log.warning("%s/%s: cannot list its DeleteRecords: %s", policy.namespace, policy.name, exc.reason)
            await stopped.wait(POLL_SECONDS)
            continue
        if outstanding is not None:
            if outstanding != waiting_for:
                log.info("%s/%s waits for DeleteRecords %s", policy.namespace, policy.name, outstanding)
                waiting_for = outstanding
            await stopped.wait(POLL_SECONDS)
            continue
        ran_generation = policy.generation
        await _run(policy, spec)
        with contextlib.suppress(ApiException):
            await asyncio.to_thread(_prune, policy, spec.history_limit)


@kopf.on.delete(GROUP, VERSION, CRD.plural, id="retentionpolicy-forget", optional=True)
def retentionpolicy_forget(namespace: str | None, name: str, **_: Any) -> None:
    """Drop the policy's metric series (its owned objects go with it through ownerReferences)."""
    for gauge in (metrics.POLICY_RECLAIMABLE_BYTES, metrics.POLICY_HELD_PARTITIONS):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, name)
