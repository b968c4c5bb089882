"""Where a run's analysis job runs: a subprocess of the operator (Local) or a SparkApplication.

Both hand the job a RunRequest and get a RunPlan back; neither lets the job touch the Kubernetes API
beyond writing its plan and progress (SparkApplication), so the job needs no right to create objects. The
operator never imports the analysis job: it talks to it through its command line and JSON
(docs/analysis.md).

A SparkApplication run lives in the operator's jobs namespace, never the policy's: its request (the
cluster's credentials) is a Secret there, mounted into driver and executors, and only the operator and
the cluster's admins read that namespace (docs/operator.md, "Threat model"). Owner references cannot
cross namespaces, so the run's objects carry their policy's namespace, name and uid as labels, by which
they are cleaned up (history.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import kopf

from ebb_operator import kube
from ebb_operator.handlers.errors import AnalysisFailed, InvalidSpec, SparkApplicationFailed
from ebb_operator.models.retention_policy import Engine, RetentionPolicySpec, RunProgress, SparkPod
from ebb_operator.models.run import PLAN_KEY, PROGRESS_KEY, PolicyRef, RunPlan, RunRequest, unpack_plan
from ebb_operator.settings import OperatorSettings

log = logging.getLogger(__name__)

# Spark operator states that end an application (spark-operator api/v1beta2 ApplicationStateType).
SPARK_TERMINAL = frozenset({"COMPLETED", "FAILED", "SUBMISSION_FAILED"})
REQUEST_DIR = "/etc/ebb/run"  # where a SparkApplication's driver and executors find the request


class AnalysisEngine(Protocol):
    engine: Engine

    async def run(self, request: RunRequest) -> RunPlan: ...


def decode_plan(raw: bytes) -> RunPlan:
    try:
        return RunPlan.model_validate_json(raw)
    except ValueError as exc:
        raise AnalysisFailed(f"the analysis job's plan is unreadable: {exc}") from exc


class LocalEngine:
    """`python -m ebb_operator.analysis` as a subprocess; its log lines go to the operator log. At most
    `settings.local_analysis_runs` run at once (`slots`, shared by every policy); a run that finds them
    taken says so through `waiting` and starts when one frees."""

    engine = Engine.LOCAL

    def __init__(
        self,
        label: str,
        settings: OperatorSettings,
        slots: asyncio.Semaphore,
        waiting: Callable[[str], Awaitable[None]],
    ) -> None:
        self.label = label
        self.settings = settings
        self.slots = slots
        self.waiting = waiting

    async def run(self, request: RunRequest) -> RunPlan:
        if self.slots.locked():
            runs = self.settings.local_analysis_runs
            await self.waiting(f"waiting for one of the operator's {runs} Local analysis slots")
            log.info("run %s of %s waits for a Local analysis slot", request.run_id, self.label)
        async with self.slots:
            return await self._run(request)

    async def _run(self, request: RunRequest) -> RunPlan:
        with tempfile.TemporaryDirectory(prefix="ebb-analysis-") as tmp:
            request_file, output = Path(tmp) / "request.json", Path(tmp) / "plan.json"
            # The request holds the cluster's credentials: only the operator's user may read it.
            fd = os.open(request_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(request.model_dump_json(by_alias=True))
            argv = local_job_argv(request_file, output, self.settings)
            log.info("run %s of %s: %s", request.run_id, self.label, " ".join(argv[1:]))
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            tail: list[str] = []
            try:
                assert proc.stdout is not None
                async for raw in proc.stdout:
                    line = raw.decode(errors="replace").rstrip()
                    if line:
                        tail = [*tail[-4:], line]
                        log.info("[analysis %s %s] %s", self.label, request.run_id, line)
                code = await proc.wait()
            finally:
                if proc.returncode is None:  # cancelled (operator stopping): leave no job behind
                    proc.kill()
                    await proc.wait()
            if code != 0:
                raise AnalysisFailed(f"analysis job exited {code}: " + " | ".join(tail))
            return decode_plan(output.read_bytes())


def local_job_argv(request_file: Path, output: Path, settings: OperatorSettings) -> list[str]:
    """The Local engine's command line (docs/analysis.md, Running it)."""
    argv = [sys.executable, "-m", "ebb_operator.analysis"]
    argv += ["--request", str(request_file), "--output", str(output)]
    if settings.local_analysis_java_options:
        # One argument with `=`: argparse takes a separate value that starts with `-` for an option.
        argv.append(f"--driver-java-options={settings.local_analysis_java_options}")
    return argv


def _main_file() -> str:
    """The analysis job's main file inside the image, found without importing it (the operator image
    is also the Spark image, so the path is the same in the driver)."""
    spec = importlib.util.find_spec("ebb_operator.analysis.__main__")
    if spec is None or spec.origin is None:
        raise AnalysisFailed("ebb_operator.analysis is not installed in the operator image")
    return f"local://{spec.origin}"


def _label_value(text: str) -> str:
    """A label value: at most 63 characters, alphanumeric at both ends."""
    return text[:63].rstrip("-_.")


def run_labels(policy: PolicyRef, run_id: str | None = None) -> dict[str, str]:
    """The labels of a run's objects in the jobs namespace: whose they are (and which run)."""
    labels = {
        kube.POLICY_NAMESPACE_LABEL: policy.namespace,
        kube.POLICY_LABEL: _label_value(policy.name),
        kube.POLICY_UID_LABEL: policy.uid or "",
    }
    if run_id is not None:
        labels[kube.RUN_LABEL] = _label_value(run_id)
    return labels


def run_selector(policy_uid: str, run_id: str | None = None) -> str:
    """Selects a policy's run objects (one run's, with `run_id`) in the jobs namespace."""
    selector = f"{kube.POLICY_UID_LABEL}={policy_uid}"
    return selector if run_id is None else f"{selector},{kube.RUN_LABEL}={_label_value(run_id)}"


def run_name(policy: PolicyRef, run_id: str) -> str:
    """The name of a run's SparkApplication, Secret and ConfigMap, unique across tenants in the shared
    jobs namespace (a digest of the policy's namespace, name and uid) and a DNS-1035 label, as the
    Services Spark names after it require: `ebb-<policy>-<digest>-<run id>`, at most 55 characters."""
    digest = hashlib.sha256(f"{policy.namespace}/{policy.name}/{policy.uid}".encode()).hexdigest()[:8]
    readable = re.sub(r"[^a-z0-9-]", "-", policy.name.lower())[:26].strip("-")
    return f"ebb-{readable}-{digest}-{run_id}"[:63].rstrip("-") if readable else f"ebb-{digest}-{run_id}"


# Pod Security "restricted" (the profile a jobs namespace should enforce): non-root, no privilege
# escalation, every capability dropped, the runtime's seccomp profile, and a read-only root filesystem
# (Spark, Python and the JVM write under /tmp and Spark's own emptyDir local dirs). The same settings as
# the operator's own pod, whose image this is. Set through pod templates (spark.kubernetes.*.podTemplate,
# which the Spark operator writes from spec.driver/executor.template), since its securityContext fields
# otherwise need its mutating webhook.
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "fsGroup": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
# The container names the Spark operator tells Spark to take from a template (podTemplateContainerName).
DRIVER_CONTAINER, EXECUTOR_CONTAINER = "spark-kubernetes-driver", "spark-kubernetes-executor"


def pod_template(container: str) -> dict[str, Any]:
    """A driver or executor pod template: the security settings above and an emptyDir at /tmp."""
    return {
        "spec": {
            "securityContext": POD_SECURITY_CONTEXT,
            "containers": [
                {
                    "name": container,
                    "securityContext": CONTAINER_SECURITY_CONTEXT,
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        }
    }


def _pod(pod: SparkPod | None, service_account: str | None, secret: str, executor: bool) -> dict[str, Any]:
    pod = pod or SparkPod()
    out: dict[str, Any] = {
        "cores": pod.cores,
        "memory": pod.memory,
        # Spark mounts the run's request (connection included) into the pod (spark.kubernetes.*.secrets).
        "secrets": [{"name": secret, "path": REQUEST_DIR, "secretType": "Generic"}],
        "template": pod_template(EXECUTOR_CONTAINER if executor else DRIVER_CONTAINER),
    }
    if executor:
        out["instances"] = pod.instances or 1
    if service_account:
        out["serviceAccount"] = service_account
    return out


def spark_application(
    name: str, namespace: str, labels: dict[str, str], spec: RetentionPolicySpec, settings: OperatorSettings
) -> dict[str, Any]:
    """The SparkApplication of one run, in the jobs namespace: the analysis job's main file, type Python,
    always the operator's image (a tenant's is refused before, access.py); the service account is the
    operator's unless the policy names one (checked before: such a run gets only the analysis credential).
    """
    app = spec.analysis.spark_application
    if not settings.image:
        raise InvalidSpec("no image for the SparkApplication: the operator has no EBB_OPERATOR_IMAGE")
    account = (app.service_account if app else None) or settings.spark_service_account
    body: dict[str, Any] = {
        "apiVersion": kube.SPARK_APPLICATIONS.api_version,
        "kind": kube.SPARK_APPLICATIONS.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": settings.image,
            "mainApplicationFile": _main_file(),
            "arguments": [
                *("--request", f"{REQUEST_DIR}/request.json"),
                *("--report-configmap", name, "--report-namespace", namespace),
            ],
            "sparkVersion": importlib.metadata.version("pyspark"),
            "restartPolicy": {"type": "Never"},
            "driver": _pod(app.driver if app else None, account, name, executor=False),
            "executor": _pod(app.executor if app else None, account, name, executor=True),
        },
    }
    if settings.spark_image_pull_secrets:
        body["spec"]["imagePullSecrets"] = list(settings.spark_image_pull_secrets)
    return body


def progress_of(app: dict[str, Any], report: dict[str, str]) -> RunProgress:
    """A run's progress: the Spark operator's state and running executors (the SparkApplication's
    status), and the stage and tasks the driver last reported (the run's ConfigMap)."""
    status = app.get("status") or {}
    executors = status.get("executorState") or {}
    progress = RunProgress(
        state=(status.get("applicationState") or {}).get("state") or "NEW",
        executors=sum(1 for state in executors.values() if state == "RUNNING"),
    )
    try:
        driver = RunProgress.model_validate_json(report.get(PROGRESS_KEY) or "{}")
    except ValueError:
        return progress  # a report being written, or not ours: the next poll reads it again
    return progress.model_copy(
        update={"stage": driver.stage, "tasks_done": driver.tasks_done, "tasks_total": driver.tasks_total}
    )


class SparkApplicationEngine:
    """One SparkApplication per run in the jobs namespace, its request in a Secret of the run, its plan and
    progress in a ConfigMap of the run (created first: every other object of the run exists only while
    it does, so cleanup finds the run by its ConfigMap or its SparkApplication)."""

    engine = Engine.SPARK_APPLICATION

    def __init__(
        self,
        body: kopf.Body,
        settings: OperatorSettings,
        namespace: str,
        on_progress: Callable[[RunProgress], Awaitable[None]],
    ) -> None:
        self.body = body
        self.settings = settings
        self.namespace = namespace
        self.on_progress = on_progress

    async def run(self, request: RunRequest) -> RunPlan:
        name = run_name(request.policy, request.run_id)
        labels = run_labels(request.policy, request.run_id)
        body = spark_application(name, self.namespace, labels, request.spec, self.settings)
        # After an operator restart the run is followed again: objects that exist are reused.
        with contextlib.suppress(kube.AlreadyExistsError):
            await asyncio.to_thread(kube.create_config_map, self.namespace, name, {}, labels)
        with contextlib.suppress(kube.AlreadyExistsError):
            data = {"request.json": request.model_dump_json(by_alias=True)}
            await asyncio.to_thread(kube.create_secret, self.namespace, name, data, labels)
        try:
            await asyncio.to_thread(kube.create_object, kube.SPARK_APPLICATIONS, self.namespace, body)
            kopf.info(
                self.body,
                reason="SparkApplicationCreated",
                message=f"SparkApplication {self.namespace}/{name}",
            )
        except kube.AlreadyExistsError:
            pass
        except kube.KubeApiError as exc:
            await self._clean(request)
            raise SparkApplicationFailed(f"cannot create SparkApplication {name}: {exc}") from exc
        try:
            await self._follow(name, request.run_id)
            try:
                data = await asyncio.to_thread(kube.read_config_map_data, self.namespace, name)
                plan = decode_plan(unpack_plan(data[PLAN_KEY]))
            except (kube.KubeApiError, KeyError, ValueError, OSError) as exc:
                raise AnalysisFailed(f"SparkApplication {name} completed without its plan: {exc}") from exc
        except asyncio.CancelledError:
            raise  # the operator stops: the run's objects stay, and the next operator resumes the run
        except Exception:
            await self._clean(request)
            raise
        await self._clean(request)
        return plan

    async def _clean(self, request: RunRequest) -> None:
        """The run's request and ConfigMap go once it ended; its SparkApplication stays (historyLimit)."""
        with contextlib.suppress(kube.KubeApiError):
            selector = run_selector(request.policy.uid or "", request.run_id)
            await asyncio.to_thread(kube.delete_labelled, self.namespace, selector)

    async def _report(self, name: str) -> dict[str, str]:
        """The run's ConfigMap as the driver left it so far (progress only: nothing when unreadable)."""
        try:
            return await asyncio.to_thread(kube.read_config_map_data, self.namespace, name)
        except kube.KubeApiError:
            return {}

    async def _follow(self, name: str, run_id: str) -> None:
        """Wait for the SparkApplication to complete, its progress copied into status meanwhile;
        SparkApplicationFailed when it ends otherwise."""
        ref = kube.ObjectRef(kube.SPARK_APPLICATIONS, self.namespace, name)
        shown: RunProgress | None = None
        while True:
            try:
                obj = await asyncio.to_thread(kube.get_object, ref)
            except kube.NotFoundError:
                raise SparkApplicationFailed(
                    f"SparkApplication {self.namespace}/{name} was deleted"
                ) from None
            report = await self._report(name)
            progress = progress_of(obj, report)
            if progress != shown:
                if shown is None or progress.state != shown.state:
                    log.info(
                        "run %s of %s/%s: SparkApplication %s/%s is %s",
                        run_id, self.body.metadata.namespace, self.body.metadata.name,
                        self.namespace, name, progress.state,
                    )  # fmt: skip
                shown = progress
                await self.on_progress(progress)
            state_info = (obj.get("status") or {}).get("applicationState") or {}
            if progress.state == "COMPLETED":
                return
            if progress.state in SPARK_TERMINAL:
                raise SparkApplicationFailed(
                    f"SparkApplication {self.namespace}/{name} {progress.state}: "
                    f"{state_info.get('errorMessage', '')}"
                )
            await asyncio.sleep(self.settings.poll_seconds)
