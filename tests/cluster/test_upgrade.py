"""Upgrades keep everything: the previous release (tools/releases.py), installed from the registry, is
upgraded to this tree's chart with `helm upgrade`, rolled back with `helm rollback`, and rolled forward to
the upgrade's revision (the release the rest of the tier uses), while a producer writes with acks=all, a
consumer group reads, and DeleteRecords keep being created. Every acknowledged record is in the log at its
offset and was consumed; every DeleteRecords created succeeded (those the API server refused while the new
admission webhook had no replica serving it are counted apart, CHANGELOG.md); the default KafkaCluster, the
broker's Secrets and its volume keep their uids (nothing was recreated); what the previous release's
operator put on objects (its finalizer) is gone again at the end. Runs first in the session, on the first
install."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import yaml

from harness.bounded import wait_until
from tests.cluster.conftest import (
    NAMESPACE,
    POLL,
    RELEASE,
    TOOLBOX,
    Published,
    Release,
    Say,
    helm_from_registry,
    start_client,
)

# The session's first test: its fixtures build and push both releases and start the node (minutes cold).
pytestmark = pytest.mark.timeout(1800)

TOPIC, GROUP, DR_TOPIC = "upgrade-check", "upgrade-readers", "upgrade-dr"
FINISHED = ("Succeeded", "Failed", "PartiallyFailed")
# The API server's refusal while the webhook the upgrade from 0.1.0 creates has no replica serving it yet.
WEBHOOK_DOWN = "failed calling webhook"
KEPT = [
    ("kafkacluster", "ebb"),
    ("secret", "ebb-broker-tls"),
    ("secret", "ebb-broker-admin"),
    ("secret", "ebb-broker-client"),
    ("pvc", "data-ebb-broker-0"),
]


def _uids(rel: Release) -> dict[tuple[str, str], str]:
    return {
        (kind, name): rel.cluster.kubectl_json("get", kind, name, "-n", NAMESPACE)["metadata"]["uid"]
        for kind, name in KEPT
    }


def _ready(obj: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", [])
    )


class DeleteRecordsSeries:
    """Creates a DeleteRecords every few seconds (each cutting the topic one offset further), for as long
    as the upgrades run: one created while the operator or the KafkaCluster is away must still succeed."""

    def __init__(self, rel: Release) -> None:
        self.rel = rel
        self.names: list[str] = []
        self.errors: list[str] = []
        self.refused: list[str] = []  # by the admission webhook's failurePolicy while no replica served it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delete-records-series", daemon=True)

    def __enter__(self) -> DeleteRecordsSeries:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            body = {
                "apiVersion": "ebb.dev/v1alpha1",
                "kind": "DeleteRecords",
                "metadata": {"name": f"upgrade-dr-{n}"},
                # Retried past a broker restart (the default 30 s is shorter than some restarts here).
                "spec": {
                    "guard": "None",
                    "timeout": "5m",
                    "partitions": [{"topic": DR_TOPIC, "partition": 0, "offset": n}],
                },
            }
            proc = self.rel.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(body), check=False)
            if proc.returncode == 0:
                self.names.append(f"upgrade-dr-{n}")
            elif WEBHOOK_DOWN in proc.stderr:  # CHANGELOG: until a new replica serves the new webhook
                self.refused.append(proc.stderr.strip())
            else:
                self.errors.append(proc.stderr.strip())
            self._stop.wait(3)


def test_upgrade_rollback_and_roll_forward_keep_every_record_and_object(
    first_install: Release, published: Published, say: Say
) -> None:
    rel = first_install
    assert rel.chart_version() == published.previous.version
    rel.pod_json_lines(TOOLBOX, "create-topics", f"{TOPIC}:3", f"{DR_TOPIC}:1")
    assert rel.pod_json_lines(TOOLBOX, "produce", DR_TOPIC, "200")[-1] == {"done": 200}
    kept = _uids(rel)
    start_client(rel, "upgrade-consumer", "read-group", TOPIC, GROUP)
    start_client(
        rel, "upgrade-producer", "produce", TOPIC, "1000000", "--interval", "0.05", "--stop-file", "/tmp/stop"
    )

    def acked() -> list[dict[str, Any]]:
        return [line for line in rel.logs("upgrade-producer") if "offset" in line]

    wait_until("the producer's first acknowledged records", lambda: len(acked()) >= 20, 120, interval=POLL)
    # Back to revision 1 (the first install), then forward to revision 2 (the upgrade) again: a rollback
    # runs no hooks, so the way forward costs the session no second run of them.
    steps = [("upgrade", published.head, ""), ("rollback", published.previous, "1"),
             ("rollback", published.head, "2")]  # fmt: skip
    with DeleteRecordsSeries(rel) as series:
        for command, target, revision in steps:
            at = len(acked())
            if command == "rollback":
                began = time.monotonic()
                rel.cluster.helm(
                    "rollback", RELEASE, revision, "--namespace", NAMESPACE, "--wait", "--timeout", "5m",
                    timeout=400,
                )  # fmt: skip
                rel.cluster.wait_ready("statefulset", "ebb-broker", NAMESPACE)
                rel.cluster.wait_ready("deployment", "ebb-operator", NAMESPACE)
                seconds = time.monotonic() - began
            else:
                seconds = helm_from_registry(rel.cluster, command, target)
            assert rel.chart_version() == target.version
            meanwhile = len(acked()) - at
            say(f"helm {command} to {target.version}: {seconds:.1f} s, {meanwhile} records acked meanwhile")
            assert _uids(rel) == kept, f"recreated by the {command} to {target.version}"
            wait_until(
                f"the KafkaCluster Ready after the {command}",
                lambda: _ready(rel.cluster.kubectl_json("get", "kafkacluster", "ebb")),
                120,
                interval=POLL,
            )
            # The release's pods run the published images: by digest where the chart pins one (0.1.0's
            # chart names a tag only).
            pod = rel.get("deployment", "ebb-operator")["spec"]["template"]["spec"]
            pinned = target.images["operator"]
            assert pod["containers"][0]["image"] in (pinned, pinned.split("@")[0])
        # The series goes on under the final release while the records are checked.
        created = len(series.names)
        rel.kubectl("exec", "upgrade-producer", "--", "touch", "/tmp/stop")
        done = wait_until(
            "the producer to stop",
            lambda: [line for line in rel.logs("upgrade-producer") if "done" in line],
            300,
            interval=POLL,
        )
        records = acked()
        assert done[0]["done"] == len(records) and len(records) > 100
        stored = {
            (r["partition"], r["offset"]): r["value"] for r in rel.pod_json_lines(TOOLBOX, "read", TOPIC)
        }
        lost = [r for r in records if stored.get((r["partition"], r["offset"])) != r["value"]]
        assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {lost[:5]}"

        def unconsumed() -> list[dict[str, Any]]:
            seen = {(r["partition"], r["offset"]) for r in rel.logs("upgrade-consumer") if "offset" in r}
            return [r for r in records if (r["partition"], r["offset"]) not in seen]

        wait_until(
            "the consumer group to read every acknowledged record",
            lambda: not unconsumed(),
            180,
            interval=POLL,
            detail=lambda _: f"{len(unconsumed())} not read, e.g. {unconsumed()[:3]}",
        )
        wait_until(
            "two DeleteRecords under the final release",
            lambda: len(series.names) >= created + 2,
            60,
            interval=POLL,
        )

    assert not series.errors, series.errors
    assert len(series.names) >= 10, series.names

    def outcomes() -> dict[str, str]:
        items = rel.cluster.kubectl_json("get", "deleterecords", "-n", NAMESPACE)["items"]
        return {d["metadata"]["name"]: d.get("status", {}).get("phase", "") for d in items}

    def unfinished(_: object) -> str:
        return report([n for n, p in outcomes().items() if n in series.names and p not in FINISHED])

    def report(names: list[str]) -> str:
        """What every operator pod said (its timers' and probes' lines left out), then the named requests
        as they are stored, kopf's annotations and managed fields (who wrote what) included: last, where a
        shortened output keeps it."""
        pods = rel.kubectl("get", "pods", "-l", "app.kubernetes.io/component=operator", "-o", "name").stdout
        logs = []
        for pod in pods.split():
            lines = rel.kubectl("logs", pod, "--tail=400", check=False).stdout.splitlines()
            said = [line for line in lines if "Timer '" not in line and "/healthz" not in line]
            logs.append(f"{pod}:\n" + "\n".join(said[-40:]))
        shown = ("-o", "yaml", "--show-managed-fields")
        stored = [rel.kubectl("get", "deleterecords", n, *shown).stdout for n in names]
        return "\n" + "\n---\n".join([*logs, *stored])

    wait_until(
        "every DeleteRecords of the series to finish",
        lambda: all(outcomes().get(n) in FINISHED for n in series.names),
        180,
        interval=POLL,
        detail=unfinished,
    )
    failed = {n: p for n, p in outcomes().items() if n in series.names and p != "Succeeded"}
    assert not failed, f"DeleteRecords created during the upgrades failed: {failed}" + report(sorted(failed))
    # This tree's operator takes off the finalizer the previous release's put on objects.
    held = wait_until(
        "the previous release's finalizers to be taken off",
        lambda: (
            not [
                d["metadata"]["name"]
                for d in rel.cluster.kubectl_json("get", "deleterecords", "-n", NAMESPACE)["items"]
                if d["metadata"].get("finalizers")
            ]
        ),
        60,
        interval=POLL,
    )
    assert held
    say(
        f"{len(records)} records acknowledged and consumed, {len(series.names)} DeleteRecords succeeded, "
        f"{len(series.refused)} refused at creation while the new webhook had no replica serving it"
    )
    for pod in ("upgrade-producer", "upgrade-consumer"):
        rel.kubectl("delete", "pod", pod, "--wait=false")
