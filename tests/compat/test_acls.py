"""Authorization (issue 11, item 3): what each API checks, Kafka's error codes, nothing done on a refusal,
principals from SASL and from client certificates, and ACLs and users surviving a restart."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from kafka.protocol.admin.transactions import DescribeTransactionsRequest, DescribeTransactionsResponse
from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from tests.compat.clients import CLIENTS, BrokerError
from tests.compat.conftest import SecureBroker
from tests.compat.wire import Wire

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
ALICE = "User:alice"
# ResourceType TOPIC=2 GROUP=3 CLUSTER=4 TRANSACTIONAL_ID=5; PatternType LITERAL=3 PREFIXED=4; op READ=3
# WRITE=4 DELETE=6 DESCRIBE=8 CLUSTER_ACTION=9; permission ALLOW=3.
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
READ, WRITE, DELETE, DESCRIBE, CLUSTER_ACTION = 3, 4, 6, 8, 9


def _call(w: Wire, request: Any, version: int, response: Any) -> Any:
    w.send_raw(w.frame(request, version))
    return response.decode(w.recv_frame(), version=version, header=True)


def _grant(sb: SecureBroker, *acls: tuple[int, str, int, str, int]) -> None:
    """CreateAcls as admin: (resource type, name, pattern type, principal, operation), ALLOW from any host."""
    w = sb.wire("SASL_PLAINTEXT", "admin")
    try:
        C = CreateAclsRequest[3].AclCreation
        creations = [
            C(
                resource_type=rt,
                resource_name=n,
                resource_pattern_type=pt,
                principal=p,
                host="*",
                operation=op,
                permission_type=3,
            )
            for rt, n, pt, p, op in acls
        ]
        resp = _call(w, CreateAclsRequest[3](creations=creations), 3, CreateAclsResponse)
        assert [r.error_code for r in resp.results] == [0] * len(acls)
    finally:
        w.close()


@pytest.fixture
def names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"acl-t-{suffix}", f"acl-g-{suffix}"


def test_delete_records_needs_delete_on_the_topic(
    secure_broker: SecureBroker, names: tuple[str, str]
) -> None:
    """KIP-107: without DELETE, TOPIC_AUTHORIZATION_FAILED and nothing deleted; with it, deleted."""
    sb, (topic, _group) = secure_broker, names
    admin = sb.client("confluent-kafka", "SASL_SSL", "admin")
    admin.create_topic(topic)
    admin.produce(topic, [(None, f"r{i}".encode()) for i in range(5)])
    _grant(sb, (TOPIC, topic, 3, ALICE, READ))  # READ implies DESCRIBE, not DELETE
    alice = sb.client("confluent-kafka", "SASL_SSL", "alice")
    with pytest.raises(BrokerError) as exc:
        alice.delete_records(topic, 0, 3)
    assert exc.value.code == TOPIC_AUTHORIZATION_FAILED
    assert admin.earliest(topic, 0) == 0
    assert [r.value for r in admin.consume(topic, 5)] == [f"r{i}".encode() for i in range(5)]
    _grant(sb, (TOPIC, topic, 3, ALICE, DELETE))
    assert alice.delete_records(topic, 0, 3) == 3
    assert admin.earliest(topic, 0) == 3


def test_group_rights_guard_commits_and_offset_deletes(
    secure_broker: SecureBroker, names: tuple[str, str]
) -> None:
    """Without READ on the group alice cannot commit; without DELETE on it she cannot delete its offsets."""
    sb, (topic, group) = secure_broker, names
    admin = sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    admin.create_topic(topic)
    admin.produce(topic, [(None, b"x")] * 10)
    admin.commit(group, topic, 0, 5)
    _grant(sb, (TOPIC, topic, 3, ALICE, READ))
    w = sb.wire("SASL_PLAINTEXT", "alice")
    try:
        C = OffsetCommitRequest[8]
        commit = C(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                C.OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        C.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=9,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        )
        resp = _call(w, commit, 8, OffsetCommitResponse)
        assert resp.topics[0].partitions[0].error_code == GROUP_AUTHORIZATION_FAILED
        assert admin.committed(group, topic, 0) == 5
        F = OffsetFetchRequest[7]
        fetched = _call(w, F(group_id=group, topics=None, require_stable=False), 7, OffsetFetchResponse)
        assert fetched.error_code == GROUP_AUTHORIZATION_FAILED
        D = OffsetDeleteRequest[0]
        delete = D(
            group_id=group,
            topics=[
                D.OffsetDeleteRequestTopic(
                    name=topic,
                    partitions=[D.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(partition_index=0)],
                )
            ],
        )
        assert _call(w, delete, 0, OffsetDeleteResponse).error_code == GROUP_AUTHORIZATION_FAILED
        assert admin.committed(group, topic, 0) == 5
        # READ on the group lets her commit, still not delete.
        _grant(sb, (GROUP, group, 3, ALICE, READ))
        assert _call(w, commit, 8, OffsetCommitResponse).topics[0].partitions[0].error_code == 0
        assert admin.committed(group, topic, 0) == 9
        assert _call(w, delete, 0, OffsetDeleteResponse).error_code == GROUP_AUTHORIZATION_FAILED
        assert admin.committed(group, topic, 0) == 9
    finally:
        w.close()


def test_produce_and_configs_need_their_rights(secure_broker: SecureBroker, names: tuple[str, str]) -> None:
    sb, (topic, _group) = secure_broker, names
    admin = sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    admin.create_topic(topic)
    alice = sb.client("confluent-kafka", "SASL_PLAINTEXT", "alice")
    with pytest.raises(BrokerError) as exc:
        alice.produce(topic, [(None, b"no")])
    assert exc.value.code == TOPIC_AUTHORIZATION_FAILED
    # retention.ms=0 would delete everything: ALTER_CONFIGS on the topic is needed.
    w = sb.wire("SASL_PLAINTEXT", "alice")
    try:
        R = IncrementalAlterConfigsRequest[1]
        req = R(
            resources=[
                R.AlterConfigsResource(
                    resource_type=2,
                    resource_name=topic,
                    configs=[
                        R.AlterConfigsResource.AlterableConfig(
                            name="retention.ms", config_operation=0, value="0"
                        )
                    ],
                )
            ],
            validate_only=False,
        )
        (res,) = _call(w, req, 1, IncrementalAlterConfigsResponse).responses
        assert res.error_code == TOPIC_AUTHORIZATION_FAILED
    finally:
        w.close()
    assert admin.describe_configs(topic)["retention.ms"] == "604800000"
    _grant(sb, (TOPIC, topic, 3, ALICE, WRITE))
    assert alice.produce(topic, [(None, b"yes")]) == [0]


def test_metadata_hides_what_a_principal_may_not_describe(
    secure_broker: SecureBroker, names: tuple[str, str]
) -> None:
    sb, (topic, _group) = secure_broker, names
    admin = sb.client("kafka-python", "SASL_PLAINTEXT", "admin")
    admin.create_topic(topic)
    admin.create_topic(topic + "-hidden")
    _grant(sb, (TOPIC, topic, 3, ALICE, DESCRIBE))
    w = sb.wire("SASL_PLAINTEXT", "alice")
    try:
        every = _call(
            w,
            MetadataRequest[12](
                topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=True
            ),
            12,
            MetadataResponse,
        )
        listed = {t.name: t for t in every.topics}
        assert topic in listed and topic + "-hidden" not in listed
        assert listed[topic].authorized_operations == {DESCRIBE}
        T = MetadataRequest[12].MetadataRequestTopic
        named = _call(
            w,
            MetadataRequest[12](topics=[T(name=topic + "-hidden")], allow_auto_topic_creation=True),
            12,
            MetadataResponse,
        )
        assert named.topics[0].error_code == TOPIC_AUTHORIZATION_FAILED
        # Auto-creation of a topic she may describe (a prefix ACL) but not create: refused, not created.
        _grant(sb, (TOPIC, topic + "-auto", 3, ALICE, DESCRIBE))
        auto = _call(
            w,
            MetadataRequest[12](topics=[T(name=topic + "-auto")], allow_auto_topic_creation=True),
            12,
            MetadataResponse,
        )
        assert auto.topics[0].error_code == TOPIC_AUTHORIZATION_FAILED
    finally:
        w.close()


def test_acl_apis_need_cluster_rights(secure_broker: SecureBroker) -> None:
    w = secure_broker.wire("SASL_SSL", "alice")
    try:
        C = CreateAclsRequest[3].AclCreation
        req = CreateAclsRequest[3](
            creations=[
                C(
                    resource_type=TOPIC,
                    resource_name="*",
                    resource_pattern_type=3,
                    principal=ALICE,
                    host="*",
                    operation=2,
                    permission_type=3,
                )
            ]
        )
        assert [r.error_code for r in _call(w, req, 3, CreateAclsResponse).results] == [
            CLUSTER_AUTHORIZATION_FAILED
        ]
    finally:
        w.close()


def test_write_txn_markers_needs_cluster_action(secure_broker: SecureBroker, names: tuple[str, str]) -> None:
    """WriteTxnMarkers (what `kafka-transactions.sh abort` sends) needs CLUSTER_ACTION on the CLUSTER, as
    Kafka's inter-broker requests: refused, no marker is written; granted, it is (bob: the other tests'
    alice keeps no cluster right)."""
    sb, (topic, _group) = secure_broker, names
    admin = sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    admin.create_topic(topic)
    admin.produce(topic, [(None, b"x")])
    M = WriteTxnMarkersRequest[1].WritableTxnMarker
    marker = M(
        producer_id=4242,
        producer_epoch=0,
        transaction_result=False,
        topics=[M.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
        coordinator_epoch=0,
    )
    request = WriteTxnMarkersRequest[1](markers=[marker])
    w = sb.wire("SASL_PLAINTEXT", "bob")
    try:
        (refused,) = _call(w, request, 1, WriteTxnMarkersResponse).markers
        assert [p.error_code for p in refused.topics[0].partitions] == [CLUSTER_AUTHORIZATION_FAILED]
        assert admin.latest(topic, 0) == 1, "a refused marker was written"
        _grant(sb, (CLUSTER, "kafka-cluster", 3, "User:bob", CLUSTER_ACTION))
        (written,) = _call(w, request, 1, WriteTxnMarkersResponse).markers
        assert [p.error_code for p in written.topics[0].partitions] == [0]
        assert admin.latest(topic, 0) == 2  # the record and the ABORT marker
    finally:
        w.close()


def test_client_certificate_dn_is_the_principal(secure_broker: SecureBroker, names: tuple[str, str]) -> None:
    sb, (topic, _group) = secure_broker, names
    sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin").create_topic(topic)
    mtls = sb.client("confluent-kafka", "MTLS")
    with pytest.raises(BrokerError) as exc:
        mtls.produce(topic, [(None, b"cert")])
    assert exc.value.code == TOPIC_AUTHORIZATION_FAILED
    dn = "User:CN=alice,OU=eng,O=Example"
    _grant(sb, (TOPIC, topic, 3, dn, WRITE), (TOPIC, topic, 3, dn, READ), (GROUP, "cert-", 4, dn, READ))
    assert mtls.produce(topic, [(None, b"cert")]) == [0]
    assert [r.value for r in mtls.consume(topic, 1, group=f"cert-{topic}")] == [b"cert"]


@pytest.mark.parametrize("client_name", ["kafka-python", "aiokafka"])
def test_python_clients_with_scram_and_acls(
    secure_broker: SecureBroker, names: tuple[str, str], client_name: str
) -> None:
    """A non-super user with a consumer's and producer's ACLs, through each library's SASL_SSL + SCRAM."""
    sb, (topic, group) = secure_broker, names
    sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin").create_topic(topic)
    _grant(
        sb, (TOPIC, topic, 3, ALICE, WRITE), (TOPIC, topic, 3, ALICE, READ), (GROUP, group, 3, ALICE, READ)
    )
    alice = sb.client(client_name, "SASL_SSL", "alice")
    try:
        alice.produce(topic, [(b"k", b"v")])
        assert [(r.key, r.value) for r in alice.consume(topic, 1, group=group)] == [(b"k", b"v")]
    finally:
        alice.close()


def test_transactional_id_rights_guard_init_producer_id_and_end_txn(
    secure_broker: SecureBroker, names: tuple[str, str]
) -> None:
    """WRITE on the TRANSACTIONAL_ID (KIP-98, as Kafka's KafkaApis): without it alice can neither take the
    id over (InitProducerId would fence its producer and abort its transaction) nor end its transaction,
    with a real client as with raw requests; the refusals change nothing, and once granted her EndTxn
    aborts it and her transactional producer works."""
    sb, (topic, _group) = secure_broker, names
    txn_id = f"txn-{topic}"
    sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin").create_topic(topic)
    _grant(sb, (TOPIC, topic, 3, ALICE, WRITE))  # the topic, not the transactional id
    config = {
        "bootstrap.servers": sb.broker.bootstrap_of("SASL_PLAINTEXT"),
        **sb.security("SASL_PLAINTEXT", "alice").confluent(),
        "transactional.id": txn_id,
    }
    alice = Producer(config)
    with pytest.raises(KafkaException) as refused:
        alice.init_transactions(30)
    assert refused.value.args[0].code() == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    owner_wire, w = sb.wire("SASL_PLAINTEXT", "admin"), sb.wire("SASL_PLAINTEXT", "alice")
    try:
        init = InitProducerIdRequest[4](
            transactional_id=txn_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
        )
        owner = _call(owner_wire, init, 4, InitProducerIdResponse)
        assert owner.error_code == 0
        A = AddPartitionsToTxnRequest[3]
        add = A(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=owner.producer_id,
            v3_and_below_producer_epoch=owner.producer_epoch,
            v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=[0])],
        )
        added = _call(owner_wire, add, 3, AddPartitionsToTxnResponse)
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        taken = _call(w, init, 4, InitProducerIdResponse)
        assert (taken.error_code, taken.producer_id) == (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
        end = EndTxnRequest[3](
            transactional_id=txn_id,
            producer_id=owner.producer_id,
            producer_epoch=owner.producer_epoch,
            committed=False,
        )
        assert _call(w, end, 3, EndTxnResponse).error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        describe = DescribeTransactionsRequest[0](transactional_ids=[txn_id])
        (state,) = _call(owner_wire, describe, 0, DescribeTransactionsResponse).transaction_states
        assert (state.transaction_state, state.producer_epoch) == ("Ongoing", owner.producer_epoch)
        _grant(sb, (TRANSACTIONAL_ID, txn_id, 3, ALICE, WRITE))
        assert _call(w, end, 3, EndTxnResponse).error_code == 0
        (state,) = _call(owner_wire, describe, 0, DescribeTransactionsResponse).transaction_states
        assert state.transaction_state == "CompleteAbort"
    finally:
        owner_wire.close()
        w.close()
    # Granted, her own transactional producer works end to end; a read_committed consumer skips the abort.
    producer = Producer(config)
    producer.init_transactions(30)
    for value, commit in ((b"aborted", False), (b"committed", True)):
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    admin = sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    assert [r.value for r in admin.consume(topic, 1)] == [b"committed"]


def test_users_and_acls_survive_a_restart(secure_broker: SecureBroker, names: tuple[str, str]) -> None:
    """Last in this module: restarts the shared broker (same ports) and checks what was stored."""
    from harness.kafka import kafka_tool

    sb, (topic, group) = secure_broker, names
    admin = sb.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    admin.create_topic(topic)
    _grant(
        sb,
        (TOPIC, topic, 3, "User:carol", WRITE),
        (TOPIC, topic, 3, "User:carol", READ),
        (GROUP, group, 3, "User:carol", READ),
    )
    props = sb.broker.data_dir.parent / "admin-restart.properties"
    props.write_text(sb.security("SASL_PLAINTEXT", "admin").java_properties())
    kafka_tool(
        "kafka-configs",
        *("--bootstrap-server", sb.broker.bootstrap_of("SASL_PLAINTEXT"), "--command-config", str(props)),
        *("--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=carol-secret]"),
        *("--entity-type", "users", "--entity-name", "carol"),
    )
    sb.broker.restart()
    sb.passwords["carol"] = "carol-secret"
    carol = sb.client("confluent-kafka", "SASL_SSL", "carol")
    assert carol.produce(topic, [(None, b"after restart")]) == [0]
    assert [r.value for r in carol.consume(topic, 1, group=group)] == [b"after restart"]
    assert (sb.broker.data_dir / "ebb-acls.json").stat().st_mode & 0o077 == 0
    assert CLIENTS["confluent-kafka"]  # the shared broker serves the next module as before
