"""A RetentionPolicy with `engine: SparkApplication` run by the real Spark operator (harness.spark_operator):
the operator pod creates the SparkApplication, the Spark operator submits it with pyspark's spark-submit,
the driver and executor run as pods of the operator image, the plan comes back and the policy deletes.
A driver that fails (here: its ServiceAccount may not create executor pods, the rights a user forgets
first) shows as a failed run in the policy's status."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.server_process import ServerProcess
from harness.spark_operator import running_spark_operator
from tests.cluster.conftest import NAMESPACE, TOOLBOX, Release, Say, wait_until

pytestmark = pytest.mark.timeout(1200)
HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def spark_operator(
    release: Release, tmp_path_factory: pytest.TempPathFactory, say: Say
) -> Iterator[ServerProcess]:
    began = time.monotonic()
    with running_spark_operator(
        release.cluster, [NAMESPACE], tmp_path_factory.mktemp("spark-operator")
    ) as op:
        say(f"Spark operator ready (CRDs applied server-side): {time.monotonic() - began:.1f} s")
        yield op


def _policy(name: str, topic: str, group: str, **spark: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name},
        "spec": {
            "topics": {"include": [topic]},
            "consumers": {"include": [group]},
            "consumedRetention": "1h",
            "schedule": {"interval": "1h"},
            "analysis": {
                "engine": "SparkApplication",
                "sparkApplication": {
                    "driver": {"cores": 1, "memory": "512m"},
                    "executor": {"cores": 1, "memory": "512m", "instances": 1},
                    **spark,
                },
            },
        },
    }


def _finished(release: Release, name: str) -> dict[str, Any] | None:
    obj: dict[str, Any] = release.get("retentionpolicy", name)
    last = (obj.get("status") or {}).get("lastRun") or {}
    return obj if last.get("outcome") not in (None, "Running") else None


def test_spark_application_runs_as_pods_and_a_failing_driver_shows_in_the_status(
    release: Release, spark_operator: ServerProcess, tmp_path: Path
) -> None:
    topic, group = "sa-orders", "sa-app"
    release.pod_json_lines(TOOLBOX, "create-topics", f"{topic}:1")
    produced = release.pod_json_lines(TOOLBOX, "produce", topic, "30", "--age-ms", str(2 * HOUR_MS))
    assert produced[-1] == {"done": 30}
    release.pod_json_lines(TOOLBOX, "commit", topic, group, "0:12")

    policies = [
        _policy("spark", topic, group),
        # The namespace's `default` ServiceAccount has no rights: the driver cannot start executors.
        _policy("spark-no-rights", topic, group, serviceAccount="default"),
    ]
    release.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(policies))

    def detail() -> str:
        apps = release.kubectl("get", "sparkapplications", "-o", "wide", check=False).stdout
        pods = release.cluster.describe_pods(NAMESPACE)
        return f"{apps}\n{pods}\nspark-operator:\n{spark_operator.log_tail()}"

    ok = wait_until(
        "the SparkApplication run of policy spark", lambda: _finished(release, "spark"), 600, detail
    )
    failed = wait_until(
        "the run of policy spark-no-rights", lambda: _finished(release, "spark-no-rights"), 300, detail
    )

    last = ok["status"]["lastRun"]
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Succeeded"), ok["status"]
    app = release.get("sparkapplication", last["sparkApplication"])
    assert app["status"]["applicationState"]["state"] == "COMPLETED", app["status"]
    # The Spark operator saw the driver pod and at least one executor pod through to the end.
    driver = release.get("pod", app["status"]["driverInfo"]["podName"])
    assert driver["status"]["phase"] == "Succeeded"
    assert driver["spec"]["containers"][0]["image"] == release.operator_image
    assert driver["spec"]["serviceAccountName"] == "ebb-spark-driver"
    assert app["status"]["executorState"], app["status"]
    assert ok["status"]["summary"]["deletableRecords"] == 12
    assert release.pod_json_lines(TOOLBOX, "log-start", topic) == [{"0": 12}]

    last = failed["status"]["lastRun"]
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Failed"), failed["status"]
    assert "FAILED" in last["message"], last
    (ready,) = [c for c in failed["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "SparkApplicationFailed"), ready
    driver_log = release.kubectl("logs", f"{last['sparkApplication']}-driver", check=False).stdout
    assert "Forbidden" in driver_log or "forbidden" in driver_log, driver_log[-3000:]
