"""Where a run's analysis job runs: a subprocess of the operator (Local) or a SparkApplication.

Both hand the job a RunRequest and get a RunPlan back; neither lets the job touch the Kubernetes API
beyond writing its plan (SparkApplication), so the job needs no right to create objects. The operator
never imports the analysis job: it talks to it through its command line and JSON (docs/analysis.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

import kopf

from ebb_operator import kube
from ebb_operator.handlers.errors import AnalysisFailed, InvalidSpec, SparkApplicationFailed
from ebb_operator.models.retention_policy import Engine, RetentionPolicySpec, SparkPod
from ebb_operator.models.run import PLAN_KEY, RunPlan, RunRequest, unpack_plan
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
    """`python -m ebb_operator.analysis` as a subprocess; its log lines go to the operator log."""

    engine = Engine.LOCAL

    def __init__(self, label: str) -> None:
        self.label = label

    async def run(self, request: RunRequest) -> RunPlan:
        with tempfile.TemporaryDirectory(prefix="ebb-analysis-") as tmp:
            request_file, output = Path(tmp) / "request.json", Path(tmp) / "plan.json"
            # The request holds the cluster's credentials: only the operator's user may read it.
            fd = os.open(request_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(request.model_dump_json(by_alias=True))
            argv = [
                sys.executable,
                "-m",
                "ebb_operator.analysis",
                "--request",
                str(request_file),
                "--output",
                str(output),
            ]
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


def _main_file() -> str:
    """The analysis job's main file inside the image, found without importing it (the operator image
    is also the Spark image, so the path is the same in the driver)."""
    spec = importlib.util.find_spec("ebb_operator.analysis.__main__")
    if spec is None or spec.origin is None:
        raise AnalysisFailed("ebb_operator.analysis is not installed in the operator image")
    return f"local://{spec.origin}"


def _pod(pod: SparkPod | None, service_account: str | None, secret: str, executor: bool) -> dict[str, Any]:
    pod = pod or SparkPod()
    out: dict[str, Any] = {
        "cores": pod.cores,
        "memory": pod.memory,
        # Spark mounts the run's request (connection included) into the pod (spark.kubernetes.*.secrets).
        "secrets": [{"name": secret, "path": REQUEST_DIR, "secretType": "Generic"}],
    }
    if executor:
        out["instances"] = pod.instances or 1
    if service_account:
        out["serviceAccount"] = service_account
    return out


def spark_application(
    name: str,
    namespace: str,
    owner: dict[str, Any],
    labels: dict[str, str],
    spec: RetentionPolicySpec,
    settings: OperatorSettings,
) -> dict[str, Any]:
    """The SparkApplication of one run: the analysis job's main file, type Python. Image and service
    account are the operator's settings unless the grant allows SparkOverrides (checked before)."""
    app = spec.analysis.spark_application
    image = (app.image if app else None) or settings.image
    if not image:
        raise InvalidSpec("no image for the SparkApplication: the operator has no EBB_OPERATOR_IMAGE")
    account = (app.service_account if app else None) or settings.spark_service_account
    return {
        "apiVersion": kube.SPARK_APPLICATIONS.api_version,
        "kind": kube.SPARK_APPLICATIONS.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "mainApplicationFile": _main_file(),
            "arguments": ["--request", f"{REQUEST_DIR}/request.json", "--report-configmap", name],
            "sparkVersion": importlib.metadata.version("pyspark"),
            "restartPolicy": {"type": "Never"},
            "driver": _pod(app.driver if app else None, account, name, executor=False),
            "executor": _pod(app.executor if app else None, account, name, executor=True),
        },
    }


class SparkApplicationEngine:
    """One SparkApplication per run, its request in a Secret of the run, its plan in a ConfigMap."""

    engine = Engine.SPARK_APPLICATION

    def __init__(
        self,
        body: kopf.Body,
        owner: dict[str, Any],
        labels: dict[str, str],
        settings: OperatorSettings,
        on_created: Any = None,
    ) -> None:
        self.body = body
        self.namespace = body.metadata.namespace or ""
        self.owner = owner
        self.labels = labels
        self.settings = settings
        self.on_created = on_created

    def app_name(self, request: RunRequest) -> str:
        return f"{request.policy.name}-{request.run_id}"[:63].rstrip("-.")

    async def run(self, request: RunRequest) -> RunPlan:
        name = self.app_name(request)
        labels = {**self.labels, kube.RUN_LABEL: request.run_id}
        body = spark_application(name, self.namespace, self.owner, labels, request.spec, self.settings)
        if self.on_created is not None:
            await self.on_created(name)
        # After an operator restart the run is followed again: objects that exist are reused.
        with contextlib.suppress(kube.AlreadyExistsError):
            data = {"request.json": request.model_dump_json(by_alias=True)}
            await asyncio.to_thread(kube.create_secret, self.namespace, name, data, labels, self.owner)
        try:
            await asyncio.to_thread(kube.create_object, kube.SPARK_APPLICATIONS, self.namespace, body)
            kopf.info(self.body, reason="SparkApplicationCreated", message=f"SparkApplication {name}")
        except kube.AlreadyExistsError:
            pass
        except kube.KubeApiError as exc:
            raise SparkApplicationFailed(f"cannot create SparkApplication {name}: {exc}") from exc
        try:
            await self._follow(name, request.run_id)
            try:
                data = await asyncio.to_thread(kube.read_config_map_data, self.namespace, name)
                raw = unpack_plan(data[PLAN_KEY])
            except (kube.KubeApiError, KeyError, ValueError, OSError) as exc:
                raise AnalysisFailed(f"SparkApplication {name} completed without its plan: {exc}") from exc
            return decode_plan(raw)
        finally:
            for delete in (kube.delete_secret, kube.delete_config_map):
                with contextlib.suppress(kube.KubeApiError):
                    await asyncio.to_thread(delete, self.namespace, name)

    async def _follow(self, name: str, run_id: str) -> None:
        ref = kube.ObjectRef(kube.SPARK_APPLICATIONS, self.namespace, name)
        seen = None
        while True:
            obj = await asyncio.to_thread(kube.get_object, ref)
            state_info = (obj.get("status") or {}).get("applicationState") or {}
            state = state_info.get("state") or "NEW"
            if state != seen:
                log.info(
                    "run %s of %s/%s: SparkApplication %s is %s",
                    run_id,
                    self.namespace,
                    self.body.metadata.name,
                    name,
                    state,
                )
                seen = state
            if state == "COMPLETED":
                return
            if state in SPARK_TERMINAL:
                raise SparkApplicationFailed(
                    f"SparkApplication {name} {state}: {state_info.get('errorMessage', '')}"
                )
            await asyncio.sleep(self.settings.poll_seconds)
