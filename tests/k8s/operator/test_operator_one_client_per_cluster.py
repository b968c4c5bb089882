"""One admin client per cluster (issue 13): 50 reconciles against a broker open no connection after the
first. Read on the broker's side, from ebb-broker's metrics: every connection a Kafka client opens starts
with ApiVersions (`ebb_requests_total{api="ApiVersions"}`), and `ebb_connections` counts the open ones. A
client per reconcile would add at least one ApiVersions per reconcile."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from harness.bounded import wait_until
from harness.ebb_broker import EbbBroker
from tests.e2e.operator.operator_kafka import create_topic, produce, unique
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, broker_metric


def _connections(broker: EbbBroker) -> float:
    return broker_metric(broker, "ebb_connections")


def _handshakes(broker: EbbBroker) -> float:
    return broker_metric(broker, 'ebb_requests_total{api="ApiVersions"}')


def _settled(broker: EbbBroker, seconds: float = 2.0) -> float:
    """The connection count once it has not moved for `seconds` (clients of the test itself gone)."""
    seen = {"value": _connections(broker), "since": time.monotonic()}

    def still() -> bool:
        now = _connections(broker)
        if now != seen["value"]:
            seen.update(value=now, since=time.monotonic())
        return time.monotonic() - seen["since"] >= seconds

    wait_until("the broker's connection count to settle", still, 30, detail=lambda _: seen)
    return seen["value"]


def test_fifty_reconciles_open_no_new_connections(
    metered_broker: EbbBroker, objects: Objects, ebb_operator: OperatorProcess, tmp_path: Path
) -> None:
    bootstrap = metered_broker.bootstrap
    topic = unique("conn")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, {0: 10})
    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "partitions": [{"topic": topic, "partition": 0, "offset": 5}],
        "dryRun": True,  # a full reconcile (metadata, offsets, the guard's groups and commits, sizes)
    }

    assert objects.apply("DeleteRecords", "c0", spec).returncode == 0
    objects.wait("deleterecords", "c0", lambda o: o.get("status", {}).get("phase") == "Succeeded")
    baseline = _settled(metered_broker)
    assert baseline >= 1  # the operator's client is connected
    handshakes = _handshakes(metered_broker)

    names = [f"c{i}" for i in range(1, 50)]
    manifest = tmp_path / "fifty.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            {"apiVersion": "ebb.dev/v1alpha1", "kind": "DeleteRecords", "metadata": {"name": n}, "spec": spec}
            for n in names
        )
    )
    objects.cp.kubectl("apply", "-n", objects.namespace, "-f", str(manifest))
    pending = set(names)

    def reconciled() -> bool:
        listing = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")
        pending.difference_update(
            o["metadata"]["name"] for o in listing["items"] if o.get("status", {}).get("phase") == "Succeeded"
        )
        return not pending

    wait_until("50 DeleteRecords reconciled", reconciled, 300, interval=0.5, detail=lambda _: sorted(pending))
    assert _handshakes(metered_broker) == handshakes, "the operator opened connections per reconcile"
    assert _settled(metered_broker) <= baseline
