"""The default `Consumed` guard of a DeleteRecords with many groups (issue 13): their commits are read in
OffsetFetch requests of many groups each (KIP-709, v8+), counted on the broker's side from ebb-broker's
metrics (`ebb_requests_total{api="OffsetFetch"}`), and the one group behind a cut among them is still
named and holds exactly its partition."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.structs import OffsetAndMetadata

from harness.bounded import close_within
from harness.ebb_broker import EbbBroker
from tests.e2e.operator.operator_kafka import create_topic, log_start, produce, unique
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, broker_metric

GROUPS = 250
GROUPS_PER_REQUEST = 100  # ebb_operator.kafka.offset_fetch


def _offset_fetches(broker: EbbBroker) -> float:
    return broker_metric(broker, 'ebb_requests_total{api="OffsetFetch"}', default=0.0)


def test_consumed_guard_reads_many_groups_in_few_requests_and_names_the_slow_one(
    metered_broker: EbbBroker, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    bootstrap = metered_broker.bootstrap
    topic = unique("guard-many")
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, {0: 30, 1: 30})
    groups = [unique(f"reader-{i:03}") for i in range(GROUPS)]
    slow = groups[137]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        for group in groups:  # every group read both partitions to 25; `slow` only partition 1, to 10
            ahead = {p: 10 if group == slow and p == 1 else 25 for p in (0, 1)}
            admin.alter_group_offsets(
                group, {KTopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in ahead.items()}
            )
    finally:
        close_within(admin)
    before = _offset_fetches(metered_broker)

    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "partitions": [{"topic": topic, "partition": p, "offset": 20} for p in (0, 1)],
    }  # guard: Consumed, the default
    assert objects.apply("DeleteRecords", "many", spec).returncode == 0
    obj = objects.wait(
        "deleterecords", "many", lambda o: o.get("status", {}).get("phase") == "PartiallyFailed"
    )

    results = {r["partition"]: r for r in obj["status"]["partitions"]}
    assert results[0]["lowWatermark"] == 20 and results[0].get("error") is None
    assert results[1]["error"].count("(committed") == 1 and f"{slow} (committed 10)" in results[1]["error"]
    assert (log_start(bootstrap, topic, 0), log_start(bootstrap, topic, 1)) == (20, 0)
    # The guard is read once, just before the DeleteRecords request: every group's commits in
    # ceil(250 / 100) = 3 requests (one coordinator), where a request per group would be 250.
    fetches = _offset_fetches(metered_broker) - before
    assert fetches == -(-GROUPS // GROUPS_PER_REQUEST), fetches
