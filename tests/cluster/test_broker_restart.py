"""A broker pod restart as Kubernetes does it (`kubectl delete pod`: SIGTERM, then the StatefulSet starts
a new pod on the same claim) while a producer pod writes with acks=all: every acknowledged record is
still there, at the offset it was acknowledged at."""

from __future__ import annotations

import subprocess
import time

import pytest

from harness.bounded import wait_until
from tests.cluster.conftest import NAMESPACE, POLL, TOOLBOX, Release, Say, start_client

pytestmark = pytest.mark.timeout(900)


def test_a_broker_pod_restart_loses_no_acknowledged_record(release: Release, say: Say) -> None:
    topic = "restart-check"
    release.pod_json_lines(TOOLBOX, "create-topics", f"{topic}:3")
    start_client(release, "restart-producer", "produce", topic, "150", "--interval", "0.02")

    def acked() -> list[dict[str, object]]:
        return [line for line in release.logs("restart-producer") if "offset" in line]

    wait_until("the producer's first 30 acknowledged records", lambda: len(acked()) >= 30, 120, interval=POLL)
    before = release.get("pod", "ebb-broker-0")["metadata"]["uid"]
    # The old pod's log goes with it: follow it, to show how its shutdown went.
    log_path = release.cluster.workdir / "broker-before-restart.log"
    with log_path.open("wb") as log:
        follow = subprocess.Popen(
            [
                str(release.cluster.cp.binaries.kubectl),
                "logs",
                "-f",
                "--tail=20",
                "-n",
                NAMESPACE,
                "ebb-broker-0",
            ],
            env=release.cluster.cp.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            began = time.monotonic()
            release.kubectl("delete", "pod", "ebb-broker-0", "--wait=true", timeout=200)
            stopped = time.monotonic() - began
        finally:
            follow.kill()
            follow.wait(10)
    release.cluster.wait_ready("statefulset", "ebb-broker", NAMESPACE)
    say(f"broker pod deleted in {stopped:.1f} s, its successor ready: {time.monotonic() - began:.1f} s")
    if stopped > 60:  # past a clean shutdown: the grace period ran out and the kubelet killed it
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        say("the broker did not exit on SIGTERM in time; its last lines:\n" + "\n".join(tail))
    assert release.get("pod", "ebb-broker-0")["metadata"]["uid"] != before
    at_restart = len(acked())

    done = wait_until(
        "the producer to finish",
        lambda: [line for line in release.logs("restart-producer") if "done" in line],
        300,
        interval=POLL,
        detail=lambda _: "\n" + "\n".join(map(str, release.logs("restart-producer")[-5:])),
    )
    records = acked()
    assert done[0]["done"] == len(records)
    assert len(records) > at_restart, "no record was acknowledged after the restart"
    stored = {
        (r["partition"], r["offset"]): r["value"] for r in release.pod_json_lines(TOOLBOX, "read", topic)
    }
    lost = [r for r in records if stored.get((r["partition"], r["offset"])) != r["value"]]
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {lost[:5]}"
