"""One request must never break, freeze or fool the broker (issue 25): topic names checked on the whole
string, internal topics closed to clients, consumed retention that a reader cannot trigger, repeated
entries answered once, topic creation off the event loop, and Kafka's answers to the small things
(`a.b` next to `a_b`, acks=5, a second SaslHandshake); and what the hostile-client harness found: nulls
where the schema forbids them, error messages that outgrow their string.

Where a behaviour is Kafka's, the test runs against ebb-broker and Apache Kafka alike (`side`)."""

from __future__ import annotations

import json
import struct
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)
from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import AddOffsetsToTxnRequest
from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from tests.compat.clients import CLIENTS, PLAINTEXT, BrokerError, Security
from tests.compat.conftest import FAST_BROKER, SecureBroker, Side, scram_authenticate
from tests.compat.test_limits import _create_topics
from tests.compat.wire import Wire

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
TOPIC_AUTHORIZATION_FAILED = 29
ILLEGAL_SASL_STATE = 34
INVALID_REQUEST = 42
POLICY_VIOLATION = 44


def _call(w: Wire, request: Any, version: int, response: Any) -> Any:
    w.send_raw(w.frame(request, version))
    return response.decode(w.recv_frame(), version=version, header=True)


def _create(w: Wire, names: list[str], configs: dict[str, str] | None = None, partitions: int = 1) -> dict:
    """CreateTopics v5; name -> (error code, error message)."""
    return {
        t.name: (t.error_code, t.error_message)
        for t in _create_topics(w, [(n, partitions) for n in names], configs)
    }


def _metadata(w: Wire, names: list[str], auto_create: bool = True) -> list[Any]:
    R = MetadataRequest[4]
    req = R(topics=[R.MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=auto_create)
    return list(_call(w, req, 4, MetadataResponse).topics)


def _list_latest(w: Wire, topic: str, partitions: list[int]) -> list[tuple[int, int]]:
    """ListOffsets v7 LATEST; (partition, error code) per answer."""
    L = ListOffsetsRequest[7]
    LP = L.ListOffsetsTopic.ListOffsetsPartition
    parts = [LP(partition_index=p, current_leader_epoch=-1, timestamp=-1) for p in partitions]
    req = L(replica_id=-1, isolation_level=0, topics=[L.ListOffsetsTopic(name=topic, partitions=parts)])
    (listed,) = _call(w, req, 7, ListOffsetsResponse).topics
    return sorted((p.partition_index, p.error_code) for p in listed.partitions)


def _ready(w: Wire, topic: str, partitions: int = 1) -> None:
    """Wait until every partition of a just created topic is served (Apache Kafka's replica manager takes
    a moment after CreateTopics answers to lead them; ebb-broker leads them at once)."""
    served = [(p, 0) for p in range(partitions)]
    until(f"{topic} served", lambda: _list_latest(w, topic, list(range(partitions))) == served, 30, 0.3)


def _batch(values: list[tuple[bytes | None, bytes]]) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for key, value in values:
        b.append(int(time.time() * 1000), key, value)
    b.close()
    return bytes(b.buffer())


def _produce(w: Wire, topic: str, partition: int, records: bytes, acks: int = -1) -> Any:
    R = ProduceRequest[7]
    data = [
        R.TopicProduceData(
            name=topic,
            partition_data=[R.TopicProduceData.PartitionProduceData(index=partition, records=records)],
        )
    ]
    resp = _call(
        w, R(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=data), 7, ProduceResponse
    )
    return resp.responses[0].partition_responses[0]


def _latest(bootstrap: str, topic: str, security: Security = PLAINTEXT) -> tuple[int, int]:
    """The partition's (log start, high watermark)."""
    c = Consumer({**security.confluent(), "bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        close_within(c)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# -- item 1: topic names ----------------------------------------------------------------------------------


def test_topic_names_are_checked_on_the_whole_string(side: Side) -> None:
    """`^[a-zA-Z0-9._-]{1,249}$` with re.match let "evil\\n" in: `$` matches before a final newline."""
    ok = _unique("names-ok")
    w = Wire(side.bootstrap)
    try:
        created = _create(w, ["evil\n", "a b", "\nlead", ok])
        assert created[ok] == (0, None)
        for bad in ("evil\n", "a b", "\nlead"):
            code, message = created[bad]
            assert code == INVALID_TOPIC_EXCEPTION, bad
            assert "ASCII alphanumerics, '.', '_' and '-'" in message
        compacted = _create(w, ["evil\n"], {"cleanup.policy": "compact"})
        assert compacted["evil\n"][0] == INVALID_TOPIC_EXCEPTION
        # Metadata auto-creation of the same names: refused the same way, nothing created
        by_name = {t.name: t.error_code for t in _metadata(w, ["evil\n", "x\n"])}
        assert by_name == {"evil\n": INVALID_TOPIC_EXCEPTION, "x\n": INVALID_TOPIC_EXCEPTION}
        assert "evil\n" not in {
            t.name for t in _call(w, MetadataRequest[4](topics=None), 4, MetadataResponse).topics
        }
    finally:
        w.close()


def test_an_illegal_name_left_on_disk_never_stops_the_broker(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    """The report's data directory, as an earlier version left it after CreateTopics "evil\\n", three
    records and DeleteRecords to offset 1 on it and on a compacted topic: the name in ebb-topics.json,
    its directories, and checkpoint entries split over two lines. The next start failed with
    `CorruptCheckpointError: header says 1 entries, found 2`; now the name is reported and skipped."""
    b = broker_factory({"log.cleaner.backoff.ms": "200"})
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic("kept")
    c.produce("kept", [(None, b"0"), (None, b"1"), (None, b"2")])
    assert c.delete_records("kept", 0, 1) == 1
    b.stop()
    data = b.data_dir
    doc = json.loads((data / "ebb-topics.json").read_text())
    for name in ("evil\n", "evil-compacted\n"):
        doc["topics"][name] = {**doc["topics"]["kept"], "id": str(uuid.uuid4())}
        (data / f"{name}-0").mkdir()
    (data / "ebb-topics.json").write_text(json.dumps(doc))
    (data / "log-start-offset-checkpoint").write_text("0\n2\nevil\n 0 1\nkept 0 1\n")
    (data / "cleaner-offset-checkpoint").write_text("0\n1\nevil-compacted\n 0 3\n")
    b.start()
    assert b.alive()
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    assert [r.value for r in c.consume("kept", 2)] == [b"1", b"2"]
    assert "skipping topic 'evil\\n'" in (b.log_dir / "ebb-broker.log").read_text()
    b.restart()  # and the checkpoints it wrote since read back
    assert _latest(b.bootstrap, "kept") == (1, 3)


# -- item 2: internal topics ------------------------------------------------------------------------------


def _offset_commit_record(group: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    """Kafka's OffsetCommitKey v1 / OffsetCommitValue v3, as an attacker would write them by hand."""

    def string(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    key = struct.pack(">h", 1) + string(group) + string(topic) + struct.pack(">i", partition)
    value = struct.pack(">hqi", 3, offset, -1) + string("") + struct.pack(">q", int(time.time() * 1000))
    return key, value


def test_clients_cannot_append_to_or_delete_from_internal_topics(side: Side) -> None:
    """Kafka's ReplicaManager: "Cannot append to internal topic" / "Cannot delete records of internal
    topic", both INVALID_TOPIC_EXCEPTION."""
    topic = _unique("internal-seed")
    c = CLIENTS["confluent-kafka"](side.bootstrap)
    c.create_topic(topic)
    seed = _unique("seed-group")

    # A fresh Kafka answers NOT_COORDINATOR until __consumer_offsets is loaded; from here on it exists.
    until("a first commit", lambda: c.commit(seed, topic, 0, 0) or True, 30, 0.3, ignore=(BrokerError,))
    w = Wire(side.bootstrap)
    try:
        key, value = _offset_commit_record("victim", topic, 0, 9999)
        for garbage in (_batch([(key, value)]), _batch([(b"junk", b"junk")])):
            refused = _produce(w, "__consumer_offsets", 0, garbage)
            assert refused.error_code == INVALID_TOPIC_EXCEPTION
        R = DeleteRecordsRequest[2]
        req = R(
            topics=[
                R.DeleteRecordsTopic(
                    name="__consumer_offsets",
                    partitions=[R.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=0, offset=-1)],
                )
            ],
            timeout_ms=10000,
        )
        (deleted,) = _call(w, req, 2, DeleteRecordsResponse).topics[0].partitions
        assert deleted.error_code == INVALID_TOPIC_EXCEPTION
    finally:
        w.close()


def test_a_forged_offset_commit_never_moves_another_groups_offset(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    """The report: a Produce to the victim's `__consumer_offsets` partition with an OffsetCommit record
    for it was accepted, and after a restart OffsetFetch answered 9999 instead of the 3 it committed."""
    b = broker_factory()
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic("victims-topic")
    c.produce("victims-topic", [(None, b"r") for _ in range(5)])
    c.commit("victim", "victims-topic", 0, 3)
    key, value = _offset_commit_record("victim", "victims-topic", 0, 9999)
    errors: list[Any] = []
    attacker = Producer({"bootstrap.servers": b.bootstrap, "retries": 0, "linger.ms": 0})
    # the victim's partition is abs(hashCode("victim")) % 4 (FAST_BROKER): every one is tried
    for p in range(4):
        attacker.produce(
            "__consumer_offsets",
            key=key,
            value=value,
            partition=p,
            on_delivery=lambda e, _m: errors.append(e),
        )
    assert attacker.flush(30) == 0
    assert [e.code() if e else None for e in errors] == [KafkaError.TOPIC_EXCEPTION] * 4
    b.restart()
    assert CLIENTS["confluent-kafka"](b.bootstrap).committed("victim", "victims-topic", 0) == 3


def test_clients_cannot_create_internal_topics(broker: EbbBroker) -> None:
    """`__transaction_state` is made by the transaction coordinator on first use, compacted; a client's
    CreateTopics (or Metadata auto-creation) of it would have made an ordinary topic in its place."""
    w = Wire(broker.bootstrap)
    try:
        assert _create(w, ["__transaction_state"])["__transaction_state"] == (
            INVALID_REQUEST,
            "Creation of internal topic __transaction_state is prohibited.",
        )
        existing = {t.name for t in _call(w, MetadataRequest[4](topics=None), 4, MetadataResponse).topics}
        if "__transaction_state" not in existing:
            (meta,) = _metadata(w, ["__transaction_state"])
            assert meta.error_code != 0 and not meta.partitions
    finally:
        w.close()


# -- item 3: consumed retention and who may trigger it -------------------------------------------------------


def _commit(w: Wire, group: str, topic: str, offset: int) -> int:
    """A standalone OffsetCommit v8 (what any consumer of the group may send); its error code."""
    C = OffsetCommitRequest[8]
    P = C.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    req = C(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            C.OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    P(
                        partition_index=0,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )
    return int(_call(w, req, 8, OffsetCommitResponse).topics[0].partitions[0].error_code)


def _grant_read(admin: Wire, principal: str, topic: str, group: str) -> None:
    C = CreateAclsRequest[3].AclCreation
    creations = [
        C(
            resource_type=rt,
            resource_name=name,
            resource_pattern_type=3,
            principal=principal,
            host="*",
            operation=3,
            permission_type=3,
        )
        for rt, name in ((2, topic), (3, group))  # TOPIC, GROUP; LITERAL; READ; ALLOW
    ]
    resp = _call(admin, CreateAclsRequest[3](creations=creations), 3, CreateAclsResponse)
    assert [r.error_code for r in resp.results] == [0, 0]


def test_a_read_only_principal_cannot_make_consumed_retention_delete(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The report: User:ANONYMOUS may only READ topic `cr` and group `reader` (its DeleteRecords is
    refused with 29), commits 2**63-1 for `reader`, and with retention.commitoffset.ms=1000 the log start
    reached the log end four seconds later. Now commits past the log end never count, and only the groups
    `retention.commitoffset.groups` names count; the positive control shows the pass does run."""
    password = "admin-secret"
    b = EbbBroker(
        tmp_path / "data",
        configs={
            **FAST_BROKER,
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
            "log.retention.check.interval.ms": "200",
            "log.segment.delete.delay.ms": "0",
        },
        metrics_port=free_port(),
        add_scram=[f"SCRAM-SHA-512=[name=admin,password={password}]"],
    ).start()
    admin_security = Security("SASL_PLAINTEXT", "SCRAM-SHA-512", "admin", password)
    sasl = b.bootstrap_of("SASL_PLAINTEXT")
    admin = Wire(sasl)
    reader = Wire(b.bootstrap_of("PLAINTEXT"))
    try:
        assert scram_authenticate(admin, "admin", password).error_code == 0
        configs = {
            "segment.bytes": "300",
            "retention.commitoffset.ms": "1000",
            "retention.commitoffset.groups": "app",
            "file.delete.delay.ms": "0",
        }
        assert _create(admin, ["cr"], configs)["cr"] == (0, None)
        producer = Producer({**admin_security.confluent(), "bootstrap.servers": sasl, "linger.ms": 0})
        for i in range(30):  # one batch each: 300-byte segments of a few records
            producer.produce("cr", value=b"record-%02d" % i, partition=0)
            assert producer.flush(10) == 0
        _grant_read(admin, "User:ANONYMOUS", "cr", "reader")
        R = DeleteRecordsRequest[2]
        P = R.DeleteRecordsTopic.DeleteRecordsPartition
        req = R(
            topics=[R.DeleteRecordsTopic(name="cr", partitions=[P(partition_index=0, offset=-1)])],
            timeout_ms=5000,
        )
        assert (
            _call(reader, req, 2, DeleteRecordsResponse).topics[0].partitions[0].error_code
            == TOPIC_AUTHORIZATION_FAILED
        )
        time.sleep(1.1)  # every record is now older than retention.commitoffset.ms

        def passes_keep_everything() -> None:
            passes = b.metric("ebb_retention_passes_total")
            until(
                "two more retention passes",
                lambda: b.metric("ebb_retention_passes_total") >= passes + 2,
                30,
                0.3,
            )
            assert _latest(sasl, "cr", admin_security) == (0, 30)

        # Kafka accepts a commit of any offset; it is stored and fetched back, and counts for nothing here.
        assert _commit(reader, "reader", "cr", 2**63 - 1) == 0
        passes_keep_everything()
        assert _commit(reader, "reader", "cr", 30) == 0  # a real position, of a group no config names
        passes_keep_everything()
        assert _commit(admin, "app", "cr", 2**63 - 1) == 0  # the named group, past the log end
        passes_keep_everything()
        assert _commit(admin, "app", "cr", 15) == 0  # the named group read up to 15: the pass runs
        until("records consumed by app deleted", lambda: _latest(sasl, "cr", admin_security)[0] > 0, 30, 0.3)
        low = _latest(sasl, "cr", admin_security)[0]
        assert 0 < low <= 15
        values = [r.value for r in CLIENTS["confluent-kafka"](sasl, admin_security).consume("cr", 30 - low)]
        assert values == [b"record-%02d" % i for i in range(low, 30)]
    finally:
        admin.close()
        reader.close()
        b.stop()


# -- item 4: repeated topics and partitions -----------------------------------------------------------------


def test_repeated_topics_and_partitions_are_answered_once(side: Side) -> None:
    """The report: 2,000 repeats of a 1,000-partition topic in a 10 KB Metadata request made a 52 MB
    answer and froze every client for 11 s. Kafka keys these requests by topic or partition."""
    topic = _unique("repeated")
    w = Wire(side.bootstrap)
    try:
        assert _create(w, [topic], partitions=50)[topic] == (0, None)
        _ready(w, topic, 50)
        (meta,) = _metadata(w, [topic] * 2000, auto_create=False)
        assert len(meta.partitions) == 50
        # ListOffsets: a repeated partition gets one INVALID_REQUEST answer (Kafka's duplicatePartitions)
        assert _list_latest(w, topic, [0, 0, 0, 1]) == [(0, INVALID_REQUEST), (1, 0)]
        # DeleteRecords: one answer per partition (Kafka keeps the last offset asked)
        R = DeleteRecordsRequest[2]
        RP = R.DeleteRecordsTopic.DeleteRecordsPartition
        req = R(
            topics=[R.DeleteRecordsTopic(name=topic, partitions=[RP(partition_index=0, offset=0)] * 500)],
            timeout_ms=5000,
        )
        (deleted,) = _call(w, req, 2, DeleteRecordsResponse).topics
        assert [(p.partition_index, p.error_code) for p in deleted.partitions] == [(0, 0)]
        # CreateTopics: a repeated name gets one INVALID_REQUEST answer and is not created
        twice = _unique("twice")
        assert _create(w, [twice, twice, twice]) == {twice: (INVALID_REQUEST, "Duplicate topic name.")}
        assert _metadata(w, [twice], auto_create=False)[0].error_code != 0
    finally:
        w.close()


def test_repeated_groups_and_partitions_in_offset_fetch_are_answered_once(broker: EbbBroker) -> None:
    """Kafka answers OffsetFetch entry by entry; a group with many commits named a thousand times would be
    answered a thousand times, so ebb-broker answers each group, topic and partition once."""
    topic, group = _unique("fetch-once"), _unique("fetch-once-g")
    c = CLIENTS["confluent-kafka"](broker.bootstrap)
    c.create_topic(topic, partitions=3)
    for p in range(3):
        c.commit(group, topic, p, 7)
    F = OffsetFetchRequest[8]
    G = F.OffsetFetchRequestGroup
    T = G.OffsetFetchRequestTopics
    w = Wire(broker.bootstrap)
    try:
        named = G(group_id=group, topics=[T(name=topic, partition_indexes=[0, 0, 1])] * 300)
        everything = G(group_id=group, topics=None)
        resp = _call(w, F(groups=[named] * 300 + [everything], require_stable=False), 8, OffsetFetchResponse)
        (answer,) = resp.groups
        (t,) = answer.topics
        assert sorted((p.partition_index, p.committed_offset) for p in t.partitions) == [
            (0, 7),
            (1, 7),
            (2, 7),
        ]
    finally:
        w.close()


# -- item 5: topic creation off the event loop --------------------------------------------------------------


def test_auto_creating_many_topics_in_one_request_freezes_no_one(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    """The report: 5,000 auto-created names in one 45 KB Metadata request froze every client for 74 s
    (ebb-topics.json rewritten per topic, on the event loop) and left the partition budget spent. Now the
    batch is checked whole, written once and made in a worker thread: another client is served while the
    request is still being answered, and a batch past the budget creates nothing."""
    b = broker_factory({"max.partitions": "300"})  # __consumer_offsets takes 4 of them, warm-up 1
    names = [f"auto-{i:04d}" for i in range(250)]
    answer: list[Any] = []
    w = Wire(b.bootstrap, timeout=120)
    creating = threading.Thread(target=lambda: answer.extend(_metadata(w, names)))
    other = Wire(b.bootstrap)
    try:
        _metadata(other, ["warm-up"])  # __consumer_offsets and one topic exist before the batch
        creating.start()
        served_meanwhile = 0
        while creating.is_alive() and served_meanwhile < 3:
            produced = _produce(other, "warm-up", 0, _batch([(None, b"still served")]))
            assert produced.error_code == 0
            served_meanwhile += creating.is_alive()
        creating.join(120)
        assert served_meanwhile == 3, "no other request was answered while the batch was being created"
        assert [(t.name, t.error_code, len(t.partitions)) for t in answer] == [(n, 0, 1) for n in names]
        # 45 partitions left: a batch of 46 is refused whole, and leaves the budget as it was
        over = _metadata(other, [f"over-{i:03d}" for i in range(46)])
        assert {t.error_code for t in over} == {POLICY_VIOLATION}
        assert _metadata(other, ["over-000"], auto_create=False)[0].error_code != 0
        assert _create(other, ["fits"], partitions=45)["fits"] == (0, None)
    finally:
        w.close()
        other.close()
    topics = json.loads((b.data_dir / "ebb-topics.json").read_text())["topics"]  # written before each answer
    assert set(names) <= set(topics) and "fits" in topics and not any(n.startswith("over-") for n in topics)


# -- item 6: Kafka's answers to the small things ------------------------------------------------------------


def test_names_that_differ_only_in_dot_and_underscore_collide(side: Side) -> None:
    """Kafka's collision rule (metric names turn '.' into '_'): INVALID_TOPIC_EXCEPTION."""
    base = uuid.uuid4().hex[:10]
    w = Wire(side.bootstrap)
    try:
        assert _create(w, [f"col.{base}"])[f"col.{base}"] == (0, None)
        code, message = _create(w, [f"col_{base}"])[f"col_{base}"]
        assert code == INVALID_TOPIC_EXCEPTION and f"collides with existing topic: col.{base}" in message
        # Metadata auto-creation: Kafka creates asynchronously and answers UNKNOWN_TOPIC_OR_PARTITION,
        # its controller then refuses the name; ebb-broker says why at once.
        (auto,) = _metadata(w, [f"col_{base}"])
        assert auto.error_code == (INVALID_TOPIC_EXCEPTION if side.is_ebb else UNKNOWN_TOPIC_OR_PARTITION)
        assert not _metadata(w, [f"col_{base}"], auto_create=False)[0].partitions
    finally:
        w.close()


def test_acks_other_than_minus_one_zero_or_one_are_refused(side: Side) -> None:
    topic = _unique("acks")
    w = Wire(side.bootstrap)
    try:
        assert _create(w, [topic])[topic] == (0, None)
        _ready(w, topic)
        for acks in (5, 2, -2):
            assert (
                _produce(w, topic, 0, _batch([(None, b"x")]), acks=acks).error_code == INVALID_REQUIRED_ACKS
            )
        assert _produce(w, topic, 0, _batch([(None, b"kept")])).base_offset == 0  # nothing was appended
    finally:
        w.close()


def test_a_second_sasl_handshake_closes_the_connection(secure_broker: SecureBroker) -> None:
    """Kafka's SaslServerAuthenticator: after a handshake only SaslAuthenticate may come; anything else is
    answered ILLEGAL_SASL_STATE and the connection closed. Once authenticated, SaslHandshake is Kafka's
    KafkaApis: ILLEGAL_SASL_STATE, and the connection stays."""
    w = secure_broker.wire("SASL_PLAINTEXT")
    try:
        for _ in range(2):
            w.send_raw(w.frame(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-512"), 1))
        first = SaslHandshakeResponse.decode(w.recv_frame(), version=1, header=True)
        second = SaslHandshakeResponse.decode(w.recv_frame(), version=1, header=True)
        assert (first.error_code, second.error_code) == (0, ILLEGAL_SASL_STATE)
        assert w.closed_by_peer()
    finally:
        w.close()
    done = secure_broker.wire("SASL_PLAINTEXT", "admin")
    try:
        again = _call(done, SaslHandshakeRequest[1](mechanism="SCRAM-SHA-512"), 1, SaslHandshakeResponse)
        assert again.error_code == ILLEGAL_SASL_STATE
        assert _call(done, ApiVersionsRequest[3](), 3, ApiVersionsResponse).error_code == 0
    finally:
        done.close()


# -- found by the hostile-client harness (tests/compat/hostile) ----------------------------------------------


def _nulls_where_the_schema_forbids_them() -> list[tuple[Any, int]]:
    """The smallest requests the harness found (or shrank to) with a null in a non-nullable field."""
    C = OffsetCommitRequest[2]
    CT = CreateTopicsRequest[5]
    IA = IncrementalAlterConfigsRequest[0]
    commit = C.OffsetCommitRequestTopic
    return [
        (AddOffsetsToTxnRequest[0](transactional_id="t", producer_id=1, producer_epoch=0, group_id=None), 0),
        (
            C(
                group_id="g",
                generation_id_or_member_epoch=-1,
                member_id="",
                retention_time_ms=-1,
                topics=[
                    commit(
                        name=None,
                        partitions=[
                            commit.OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=5, committed_metadata=""
                            )
                        ],
                    )
                ],
            ),
            2,
        ),
        (
            CT(
                topics=[
                    CT.CreatableTopic(
                        name=_unique("null-config"),
                        num_partitions=1,
                        replication_factor=1,
                        assignments=[],
                        configs=[CT.CreatableTopic.CreatableTopicConfig(name=None, value="1")],
                    )
                ],
                timeout_ms=1000,
                validate_only=False,
            ),
            5,
        ),
        (
            IA(
                resources=[
                    IA.AlterConfigsResource(
                        resource_type=4,
                        resource_name="",
                        configs=[
                            IA.AlterConfigsResource.AlterableConfig(name=None, config_operation=0, value="5")
                        ],
                    )
                ],
                validate_only=False,
            ),
            0,
        ),
    ]


def test_a_null_where_the_schema_forbids_one_closes_the_connection(side: Side, request: Any) -> None:
    """Kafka's generated readers throw "non-nullable field X was serialized as null" and Kafka closes the
    connection: so does ebb-broker, before any handler runs. Before, kafka-python's decoder let the null
    through: an offset commit for topic null was answered (with a null name, which a Java client cannot
    read), a topic config named null reached the config check, and AddOffsetsToTxn and a broker config
    change raised in their handlers (an ERROR with a traceback in the broker log, per request)."""
    log: Path | None = request.getfixturevalue("broker").log_path if side.is_ebb else None
    logged = log.stat().st_size if log is not None else 0
    for message, version in _nulls_where_the_schema_forbids_them():
        w = Wire(side.bootstrap)
        try:
            w.send_raw(w.frame(message, version))
            assert w.closed_by_peer(timeout=10), type(message).__name__
        finally:
            w.close()
    w = Wire(side.bootstrap)
    try:
        hello = ApiVersionsRequest[3](client_software_name="ebb-tests", client_software_version="1")
        assert _call(w, hello, 3, ApiVersionsResponse).error_code == 0
    finally:
        w.close()
    if log is not None:
        with log.open() as f:
            f.seek(logged)
            assert not [line for line in f if " ERROR " in line]


def test_an_error_message_naming_a_huge_topic_name_still_fits(side: Side) -> None:
    """CreatePartitions v0 (int16-prefixed strings) for a topic named with 32,767 bytes: UNKNOWN_TOPIC_OR_
    PARTITION, as Kafka answers. Before, ebb-broker's message `topic 'xxx…' does not exist` outgrew the
    string and the answer could not be encoded: the connection was closed instead."""
    P = CreatePartitionsRequest[0]
    req = P(
        topics=[P.CreatePartitionsTopic(name="x" * 32767, count=2, assignments=None)],
        timeout_ms=1000,
        validate_only=False,
    )
    w = Wire(side.bootstrap)
    try:
        (result,) = _call(w, req, 0, CreatePartitionsResponse).results
    finally:
        w.close()
    assert (result.name, result.error_code) == ("x" * 32767, UNKNOWN_TOPIC_OR_PARTITION)
