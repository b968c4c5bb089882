"""ebb-broker counts what left the log before a group read it (issue 23): real clients commit and delete,
the metric `ebb_records_deleted_unread_total{topic,group}` is checked against ground truth, across
DeleteRecords, time retention and a restart; client quotas survive the restart too."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, QuotaEntity
from harness.bounded import until
from harness.ebb_broker import EbbBroker
from tests.compat.clients import ConfluentClient

UNREAD = "ebb_records_deleted_unread_total"


def test_unread_loss_equals_the_records_each_group_never_read(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    broker = broker_factory({"log.retention.check.interval.ms": "200"})
    topic = f"loss-{uuid.uuid4().hex[:8]}"
    client = ConfluentClient(broker.bootstrap)
    client.create_topic(topic)
    client.produce(topic, [(None, b"r%d" % i) for i in range(100)])
    client.commit("behind", topic, 0, 30)
    client.commit("ahead", topic, 0, 80)

    def unread(group: str) -> float:
        return broker.metric(UNREAD, topic=topic, group=group)

    # DeleteRecords to 60: "behind" loses [30, 60); "ahead" committed past it and loses nothing.
    assert client.delete_records(topic, 0, 60) == 60
    assert (unread("behind"), unread("ahead")) == (30, 0)
    assert client.delete_records(topic, 0, 60) == 60  # idempotent (KIP-107): nothing leaves, nothing counted
    assert unread("behind") == 30

    # Time retention takes the rest: [60, 100) for "behind", [80, 100) for "ahead", once each.
    client.alter_configs(topic, {"retention.ms": "1"})
    until("retention to empty the log", lambda: client.earliest(topic, 0) == 100, timeout=30)
    # Counted on the broker's event loop right after the pass moved the log start (no request waits for it).
    until("the retention's unread loss counted", lambda: (unread("behind"), unread("ahead")) == (70, 20), 10)

    quota = QuotaEntity.of(client_id=f"kept-{topic}")
    with ClusterAdmin(ClusterConnection.of(broker.bootstrap)) as admin:
        assert admin.alter_client_quotas({quota: {"producer_byte_rate": 4096}}) == {quota: None}

    # A restarted broker counts from 0 and only what leaves the log from then on (the log start is kept).
    broker.restart()
    client = ConfluentClient(broker.bootstrap)
    client.alter_configs(topic, {"retention.ms": "-1"})
    client.produce(topic, [(None, b"s%d" % i) for i in range(20)])
    assert client.delete_records(topic, 0, 110) == 110
    assert (unread("behind"), unread("ahead")) == (10, 10)
    with ClusterAdmin(ClusterConnection.of(broker.bootstrap)) as admin:
        assert admin.client_quotas()[quota] == {"producer_byte_rate": 4096.0}
