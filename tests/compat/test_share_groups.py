"""Share groups (KIP-932) side by side: Apache Kafka 4.3.1 serves them, ebb-broker answers their APIs as
unsupported, the way Kafka answers an API it does not serve.

ebb-broker advertises none of the share-group APIs in ApiVersions, so a client asks for none (Kafka's and
librdkafka's clients check ApiVersions first); a client that sends one anyway has its connection closed,
as Kafka closes it for an API key it does not know, and the next connection is served. The operator asks
a cluster for share groups only where ApiVersions lists DescribeShareGroupOffsets: against ebb-broker no
group has share-group state.
"""

from __future__ import annotations

import uuid

from kafka.admin import KafkaAdminClient

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, KafkaFailure
from ebb_operator.kafka.share_group_offsets import request
from harness.bounded import wait_until
from tests.compat.conftest import Side
from tests.compat.wire import Wire

# ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge (76-79), the share-group state
# APIs between brokers (83-87), DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets
# (90-92).
SHARE_GROUP_APIS = {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}


def test_share_group_apis_are_served_by_kafka_and_refused_by_ebb_broker(side: Side) -> None:
    admin = KafkaAdminClient(bootstrap_servers=side.bootstrap, request_timeout_ms=10_000)
    try:
        advertised = set(admin.api_versions()) & SHARE_GROUP_APIS
    finally:
        admin.close()
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with ClusterAdmin(ClusterConnection(bootstrap_servers=side.bootstrap)) as cluster:
        # (A new Apache Kafka has no group coordinator until it has created __consumer_offsets.)
        answer = wait_until(
            "an answer that is not a retriable failure",
            lambda: cluster.share_group_offsets([group])[group],
            60,
            until=lambda found: not (isinstance(found, KafkaFailure) and found.retriable),
            interval=0.5,
        )
        share_groups = [g.group_id for g in cluster.list_groups() if g.is_share]
    # No state for this id: on Kafka, no share group has it yet; on ebb-broker, there are no share groups.
    assert answer == {}, answer
    if not side.is_ebb:
        assert advertised >= {76, 77, 78, 79, 90}, sorted(advertised)
        return
    assert advertised == set(), sorted(advertised)
    assert share_groups == []
    with Wire(side.bootstrap) as w:
        w.send_raw(w.frame(request([group]), 0))
        assert w.closed_by_peer(timeout=10)
    with ClusterAdmin(ClusterConnection(bootstrap_servers=side.bootstrap)) as cluster:
        assert cluster.cluster_id()  # the next connection is served
