"""A TEST-ONLY stand-in for the Spark operator's controller (kubeflow/spark-operator), which cannot run
on the test control plane (no kubelet, no pods).

It watches SparkApplications in one namespace and, for each new one, runs what the driver pod would
run: the application's `mainApplicationFile` (a `local://` path, as in the image) with its `arguments`,
locally, with the given kubeconfig in place of the driver's ServiceAccount. It writes
`status.applicationState.state` as the real controller does (SUBMITTED, RUNNING, then COMPLETED or
FAILED with `errorMessage`). Nothing else of the Spark operator (pods, UI, retries) is imitated.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
CRD_PATH = Path(__file__).with_name("sparkapplication-crd.yaml")
# The analysis job's Spark is sized for real clusters; on a few records its JIT and code generation
# cost more than the work (minutes on a busy 2-core machine). Same job, same results, cheaper start.
SMALL_SPARK_ENV = {
    "PYSPARK_SUBMIT_ARGS": "--conf spark.sql.codegen.wholeStage=false "
    "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"
}


class SparkOperatorStandIn:
    """Runs each SparkApplication once; `runs` lists the names it ran, `log_dir` holds their output."""

    def __init__(self, kubeconfig: Path, namespace: str, log_dir: Path, env: dict[str, str]) -> None:
        api_client = config.new_client_from_config(str(kubeconfig))
        self.api = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.namespace = namespace
        self.log_dir = log_dir
        self.env = env
        self.runs: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-operator-standin", daemon=True)

    def _set_state(self, name: str, state: str, message: str = "") -> None:
        status: dict[str, Any] = {"applicationState": {"state": state}}
        if message:
            status["applicationState"]["errorMessage"] = message
        self.api.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, PLURAL, name, {"status": status}
        )

    def _run(self, app: dict[str, Any]) -> None:
        name = app["metadata"]["name"]
        spec = app["spec"]
        self.runs.append(name)
        main = str(spec["mainApplicationFile"]).removeprefix("local://")
        arguments = [str(a) for a in spec.get("arguments", [])]
        # Spark mounts spec.driver.secrets into the driver pod; here: the Secret's keys as files of a
        # directory of the stand-in's, and the arguments pointing into the pod path pointed there.
        for mount in (spec.get("driver") or {}).get("secrets") or []:
            secret = self.core.read_namespaced_secret(mount["name"], self.namespace)
            local = self.log_dir / f"{name}-secret-{mount['name']}"
            local.mkdir(parents=True, exist_ok=True)
            for key, value in (secret.data or {}).items():
                (local / key).write_bytes(base64.b64decode(value))
            arguments = [a.replace(mount["path"], str(local)) for a in arguments]
        self._set_state(name, "SUBMITTED")
        self._set_state(name, "RUNNING")
        log = self.log_dir / f"{name}.log"
        with log.open("wb") as out:
            self._proc = subprocess.Popen(
                [sys.executable, main, *arguments],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
            proc = self._proc
            proc.wait()
        if proc.returncode == 0:
            self._set_state(name, "COMPLETED")
        else:
            tail = log.read_text(errors="replace")[-500:]
            self._set_state(name, "FAILED", f"driver exited {proc.returncode}: {tail}")

    def _loop(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(
                    self.api.list_namespaced_custom_object, GROUP, VERSION, self.namespace, PLURAL,
                    timeout_seconds=2,
                ):  # fmt: skip
                    app = event["object"]
                    state = ((app.get("status") or {}).get("applicationState") or {}).get("state")
                    if event["type"] == "ADDED" and not state and app["metadata"]["name"] not in self.runs:
                        self._run(app)
                    if self._stop.is_set():
                        break
            finally:
                stream.stop()

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()  # the test is over: a driver still running is abandoned, not awaited
        self._thread.join(timeout=320)


@contextmanager
def spark_operator_standin(
    kubeconfig: Path, namespace: str, log_dir: Path, env: dict[str, str]
) -> Iterator[SparkOperatorStandIn]:
    standin = SparkOperatorStandIn(kubeconfig, namespace, log_dir, env)
    standin.start()
    try:
        yield standin
    finally:
        standin.stop()
