"""A RetentionPolicy with `engine: SparkApplication` run by the real Spark operator (harness.spark_operator):
the operator pod creates the SparkApplication, the Spark operator submits it with pyspark's spark-submit,
the driver and executor run as pods of the operator image, the plan comes back and the policy deletes.
A driver that fails (here: its ServiceAccount may not create executor pods, the right a user forgets
first) shows as a failed run in the policy's status. The runs start in the `spark_runs` fixture."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.cluster.conftest import NAMESPACE, SPARK_TOPIC, TOOLBOX, Release, Say, SparkRuns, wait_until

pytestmark = pytest.mark.timeout(1200)


def _finished(release: Release, name: str) -> dict[str, Any] | None:
    obj: dict[str, Any] = release.get("retentionpolicy", name)
    last = (obj.get("status") or {}).get("lastRun") or {}
    return obj if last.get("outcome") not in (None, "Running") else None


def test_spark_application_runs_as_pods_and_a_failing_driver_shows_in_the_status(
    release: Release, spark_runs: SparkRuns, say: Say
) -> None:
    began = time.monotonic()

    def detail() -> str:
        apps = release.kubectl("get", "sparkapplications", "-o", "wide", check=False).stdout
        pods = release.cluster.describe_pods(NAMESPACE)
        return f"{apps}\n{pods}\nspark-operator:\n{spark_runs.operator.log_tail()}"

    ok = wait_until(
        "the SparkApplication run of policy spark", lambda: _finished(release, "spark"), 900, detail
    )
    failed = wait_until(
        "the run of policy spark-no-rights", lambda: _finished(release, "spark-no-rights"), 300, detail
    )
    say(f"SparkApplication runs finished, {time.monotonic() - began:.1f} s after this test started")

    last = ok["status"]["lastRun"]
    if last.get("outcome") != "Succeeded" and last.get("sparkApplication"):
        log = release.kubectl("logs", f"{last['sparkApplication']}-driver", check=False)
        raise AssertionError(f"{ok['status']}\ndriver log:\n{(log.stdout + log.stderr)[-6000:]}")
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Succeeded"), ok["status"]
    app = release.get("sparkapplication", last["sparkApplication"])
    assert app["status"]["applicationState"]["state"] == "COMPLETED", app["status"]
    # The driver ran as a pod of the operator image, under the chart's driver ServiceAccount, and the
    # Spark operator followed at least one executor pod it started.
    driver = release.get("pod", app["status"]["driverInfo"]["podName"])
    assert driver["status"]["phase"] == "Succeeded"
    assert driver["spec"]["containers"][0]["image"] == release.operator_image
    assert driver["spec"]["serviceAccountName"] == "ebb-spark-driver"
    assert app["status"]["executorState"], app["status"]
    assert ok["status"]["summary"]["deletableRecords"] == 12
    assert release.pod_json_lines(TOOLBOX, "log-start", SPARK_TOPIC) == [{"0": 12}]
    # test_failover killed the operator's leader in the middle of this run: the next leader followed the
    # same SparkApplication to its end (no new run), and the run made one DeleteRecords. (A run before it
    # may have failed: spark-submit gives up when the API server is slow to answer on a loaded machine.)
    assert last["id"] == spark_runs.interrupted["spark"], (last, spark_runs.interrupted)
    owned = release.cluster.kubectl_json(
        "get", "deleterecords", "-n", NAMESPACE, "-l", "ebb.dev/retention-policy=spark"
    )["items"]
    assert [o["metadata"]["name"] for o in owned] == [f"spark-{last['id']}"]

    last = failed["status"]["lastRun"]
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Failed"), failed["status"]
    assert "FAILED" in last["message"], last
    (ready,) = [c for c in failed["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "SparkApplicationFailed"), ready
    driver_log = release.kubectl("logs", f"{last['sparkApplication']}-driver", check=False).stdout
    assert "forbidden" in driver_log.lower(), driver_log[-3000:]
