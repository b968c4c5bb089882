"""Two operator replicas (the chart's default) on the real node; the leader's process killed with SIGKILL
from the host (its container's PID 1 is tini, the operator a child of it: a true kill -9 of the process,
not a pod deletion) in the middle of a 100-partition DeleteRecords and of a SparkApplication run.

The DeleteRecords is finished once: one DeleteRecords request at the broker carrying its partitions,
whatever the moment of the kill. The SparkApplication run is followed by whoever leads next and ends
once, with one SparkApplication and one DeleteRecords (test_spark_application checks its outcome). The
takeover time is printed: from the kill to the first write of the Lease by a live replica (its renewTime,
written by the operator on this machine's clock, the one the kill is timed with), with the chart's
default lease settings.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.bounded import until, wait_until
from harness.node import ctr
from tests.cluster.conftest import JOBS, NAMESPACE, POLL, TENANT, TOOLBOX, Release, Say, SparkRuns

pytestmark = pytest.mark.timeout(900)
LEASE = "ebb-operator"  # the chart's operator fullname
TOPIC, PARTITIONS = "failover", 100
DELETE_REQUESTS = re.compile(r'^ebb_requests_total\{api="DeleteRecords"\} (\S+)$', re.MULTILINE)


def _operator_pods(release: Release) -> list[dict[str, Any]]:
    pods = release.cluster.kubectl_json(
        "get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=operator"
    )
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def _operator_process(pod: dict[str, Any]) -> int:
    """The host PID of `python -m ebb_operator` in the pod's operator container (a child of tini)."""
    (status,) = [c for c in pod["status"]["containerStatuses"] if c["name"] == "operator"]
    container = status["containerID"].split("://", 1)[1]
    tasks = ctr("tasks", "ls", timeout=30).stdout.splitlines()
    (init,) = [int(line.split()[1]) for line in tasks if line.split()[:1] == [container]]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == init and b"ebb_operator" in cmdline:
            return int(stat.parent.name)
    raise AssertionError(f"no ebb_operator process under tini (pid {init}) in {pod['metadata']['name']}")


def _lease(release: Release) -> dict[str, Any]:
    return release.get("lease", LEASE)["spec"]


def _renewed(spec: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00"))


def _kill_leader(release: Release) -> tuple[str, datetime]:
    """SIGKILL the process holding the Lease; (its pod, the moment)."""
    holder = _lease(release)["holderIdentity"]
    (pod,) = [p for p in _operator_pods(release) if p["metadata"]["name"] == holder]
    pid = _operator_process(pod)
    killed_at = datetime.now(UTC)
    os.kill(pid, signal.SIGKILL)
    return holder, killed_at


def _takeover(release: Release, killed_at: datetime) -> tuple[str, float]:
    """(the new holder, seconds from the kill to its first write of the Lease)."""

    def written() -> dict[str, Any] | None:
        spec = _lease(release)
        return spec if _renewed(spec) > killed_at else None

    spec = until(
        "a replica to take the lease over",
        written,
        120,
        interval=POLL,
        detail=lambda _: "\n" + release.cluster.describe_pods(NAMESPACE),
    )
    return str(spec["holderIdentity"]), (_renewed(spec) - killed_at).total_seconds()


def _both_ready(release: Release) -> None:
    release.cluster.wait_ready("deployment", "ebb-operator", NAMESPACE)
    wait_until(
        "two ready operator replicas",
        lambda: (
            sum(
                all(c["ready"] for c in p["status"].get("containerStatuses", []))
                for p in _operator_pods(release)
            )
            == 2
        ),
        180,
        interval=POLL,
    )


def _delete_requests(release: Release) -> float:
    text = release.kubectl(
        "exec", TOOLBOX, "--", "python", "/scripts/kafka_client.py", "get",
        f"http://ebb-broker.{NAMESPACE}.svc.cluster.local:9404/metrics",
    ).stdout  # fmt: skip
    match = DELETE_REQUESTS.search(text)
    return float(match.group(1)) if match else 0.0


def _first_phase(release: Release, name: str) -> tuple[subprocess.Popen[str], threading.Event, list[str]]:
    """Watch the DeleteRecords' status.phase (kubectl prints the current state, then every change); the
    event is set on the first phase it shows."""
    watch = subprocess.Popen(
        [
            str(release.cluster.cp.binaries.kubectl), "get", "deleterecords", name, "-n", NAMESPACE,
            "--watch", "-o", "jsonpath={.status.phase}{'\\n'}",
        ],
        env=release.cluster.cp.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    seen, phases = threading.Event(), []

    def follow() -> None:
        assert watch.stdout is not None
        with watch.stdout:  # read to the end (kubectl killed), then closed: no pipe left behind
            for line in watch.stdout:
                if line.strip() and not seen.is_set():
                    phases.append(line.strip())
                    seen.set()

    threading.Thread(target=follow, daemon=True).start()
    return watch, seen, phases


def _others_running(release: Release, since: datetime) -> list[str]:
    """DeleteRecords of other objects (the Spark runs' policies) that ran since `since`: each sends its own
    request to the broker."""
    items = release.cluster.kubectl_json("get", "deleterecords", "-A")["items"]
    ran = []
    for obj in items:
        status = obj.get("status") or {}
        if obj["metadata"]["name"] == TOPIC or obj["spec"].get("dryRun") or not status.get("startedAt"):
            continue
        done = status.get("completedAt")
        if done is None or datetime.fromisoformat(done.replace("Z", "+00:00")) >= since.replace(
            microsecond=0
        ):
            ran.append(obj["metadata"]["name"])
    return ran


def test_kill_9_of_the_leader_mid_spark_run_and_mid_delete_records(
    release: Release, spark_runs: SparkRuns, say: Say
) -> None:
    # The SparkApplication run of policy `spark` (fixture spark_runs, started with this test): the leader
    # dies while the driver runs. The next leader follows the same run; test_spark_application checks that
    # it ends once, Succeeded, with one SparkApplication and one DeleteRecords.
    _both_ready(release)

    def running() -> dict[str, Any] | None:
        policy = release.cluster.kubectl_json("-n", TENANT, "get", "retentionpolicy", "spark")
        last = (policy.get("status") or {}).get("lastRun") or {}
        app = last.get("sparkApplication")
        if last.get("outcome") != "Running" or not app:
            return None
        found = release.cluster.kubectl("-n", JOBS, "get", "sparkapplication", app, "-o", "json", check=False)
        if found.returncode != 0:  # recorded in status just before it is created
            return None
        state = (json.loads(found.stdout).get("status") or {}).get("applicationState") or {}
        return last if state.get("state") == "RUNNING" else None

    last = until("the SparkApplication of policy spark to run", running, 600, interval=POLL)
    spark_runs.interrupted["spark"] = last["id"]
    killed, killed_at = _kill_leader(release)
    holder, took = _takeover(release, killed_at)
    app = last["sparkApplication"]
    say(f"SparkApplication {app} running: leader {killed} killed, {holder} took over after {took:.1f} s")

    # A DeleteRecords of 100 partitions: the leader dies as soon as the run shows in status.
    release.pod_json_lines(TOOLBOX, "create-topics", f"{TOPIC}:{PARTITIONS}")
    produced = release.pod_json_lines(TOOLBOX, "produce", TOPIC, str(PARTITIONS), "--spread", str(PARTITIONS))
    assert produced[-1] == {"done": PARTITIONS}, produced[-3:]
    before, since = _delete_requests(release), datetime.now(UTC)
    body = {
        "apiVersion": "ebb.dev/v1alpha1", "kind": "DeleteRecords", "metadata": {"name": TOPIC},
        "spec": {"guard": "None", "partitions": [
            {"topic": TOPIC, "partition": p, "offset": -1} for p in range(PARTITIONS)
        ]},
    }  # fmt: skip
    release.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(body))
    watch, seen, phases = _first_phase(release, TOPIC)
    try:
        assert seen.wait(120), "the DeleteRecords showed no phase"
        killed, killed_at = _kill_leader(release)
    finally:
        watch.kill()
        watch.wait(10)
    cut = sum(v == 1 for v in release.pod_json_lines(TOOLBOX, "log-start", TOPIC)[0].values())
    holder, took = _takeover(release, killed_at)

    def succeeded() -> dict[str, Any] | None:
        obj: dict[str, Any] = release.get("deleterecords", TOPIC)
        return obj if obj.get("status", {}).get("phase") == "Succeeded" else None

    obj = until("the DeleteRecords to finish", succeeded, 180, interval=POLL)
    finished = (datetime.now(UTC) - killed_at).total_seconds()
    say(
        f"DeleteRecords of {PARTITIONS} partitions: leader {killed} killed at phase {phases[0]} ({cut} "
        f"partitions cut then), {holder} took over after {took:.1f} s, done {finished:.0f} s after the kill"
    )
    assert {p["lowWatermark"] for p in obj["status"]["partitions"]} == {1}
    assert obj["status"]["deletedRecords"] == PARTITIONS
    assert set(release.pod_json_lines(TOOLBOX, "log-start", TOPIC)[0].values()) == {1}
    events = release.cluster.kubectl_json(
        "get", "events", "-n", NAMESPACE, "--field-selector", f"involvedObject.name={TOPIC}"
    )["items"]
    assert [e["reason"] for e in events].count("RecordsDeleted") == 1
    others = _others_running(release, since)
    assert _delete_requests(release) - before == 1 + len(others), others
    _both_ready(release)
