"""What a broker accepts from producers, ebb-broker and Apache Kafka 4.3.1 side by side.

Kafka's LogValidator checks every batch record by record and names the records it refuses (KIP-467); a
producer relies on that: librdkafka fails exactly the culprit records with INVALID_RECORD and the rest of
their batch with a local "invalid record in the same batch" error. Hostile batches (valid CRC, lying
count, negative lengths, garbage records) are refused and leave the log as it was; a decompression bomb
does not grow ebb-broker's memory.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker
from tests.compat.conftest import Side
from tests.compat.wire import Wire
from tests.record_batches import raw_batch, record, varint, zstd_zeros

INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_DIFFERENT_RECORD = -138  # librdkafka: failed because of another record in its batch
KEYLESS = {3, 17, 18, 40, 41, 42, 60, 77, 98, 99}
P = ProduceRequest[9]


def _topic(side: Side, **config: str) -> str:
    name = f"pv-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": side.bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(30)
    # Kafka answers NOT_LEADER / UNKNOWN_TOPIC for a moment after creating a topic: wait for its leader.
    until(f"{name}'s leader", lambda: _log_end(side, name) + 1, 30, 0.1, ignore=(KafkaException,))
    return name


def _now() -> int:
    return int(time.time() * 1000)


def _produce(wire: Wire, topic: str, records: bytes, version: int = 9) -> object:
    """One Produce request for partition 0; the partition's response."""
    request = ProduceRequest[version](
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            P.TopicProduceData(
                name=topic, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    wire.send_raw(wire.frame(request, version))
    response = ProduceResponse.decode(wire.recv_frame(), version=version, header=True)
    return response.responses[0].partition_responses[0]


def _log_end(side: Side, topic: str) -> int:
    c = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"le-{uuid.uuid4().hex}"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        close_within(c)


def test_keyless_records_on_a_compacted_topic_are_named(side: Side) -> None:
    """KIP-467 as a librdkafka producer sees it: of a 100-record batch with 10 keyless records, exactly
    those 10 fail with INVALID_RECORD; the other 90 fail because of them; nothing is stored."""
    topic = _topic(side, **{"cleanup.policy": "compact"})
    # One batch: librdkafka's flush() sends what is queued at once, ignoring linger.ms, so a linger far
    # beyond the time the loop below takes (seconds on a loaded machine) keeps the 100 records together.
    # Its statistics say how many batches it actually sent, so a failure tells a producer that split the
    # records (each batch is then judged on its own) from a broker that answered one batch differently.
    statistics: list[dict[str, Any]] = []
    producer = Producer(
        {
            "bootstrap.servers": side.bootstrap,
            "linger.ms": 60_000,
            "acks": "all",
            "statistics.interval.ms": 100,
            "stats_cb": lambda text: statistics.append(json.loads(text)),
        }
    )
    # A producer that does not know the partition yet queues records unassigned and moves them to the
    # partition one by one once its metadata arrives, while flush() already sends what is there: under
    # load it sent the 100 records in 4 Produce requests, each batch judged on its own (the failure once
    # seen, records 0-8 not failed with the others, fits). Knowing the partition first puts all 100 in
    # its queue before flush().
    producer.list_topics(topic, timeout=10)
    results: dict[int, int] = {}
    for i in range(100):
        producer.produce(
            topic,
            key=None if i in KEYLESS else b"k%d" % i,
            value=b"v%d" % i,
            partition=0,
            on_delivery=functools.partial(_record_result, results, i),
        )
    assert producer.flush(30) == 0

    def sent_all() -> Sent | None:
        producer.poll(0.1)  # statistics arrive through poll
        sent = _sent(statistics, topic)
        return sent if sent is not None and sent.records >= 100 else None

    sent = until("the producer's statistics of the 100 records it sent", sent_all, 10, interval=0)
    by_code: dict[int, list[int]] = {}
    for i, code in sorted(results.items()):
        by_code.setdefault(code, []).append(i)
    assert sent.produce_requests == 1, f"the producer sent the records in several requests: {sent}; {by_code}"
    answered = f"the broker answered the one batch of 100 records with, per code: {by_code}"
    assert by_code.get(INVALID_RECORD) == sorted(KEYLESS), answered
    assert by_code.get(INVALID_DIFFERENT_RECORD) == sorted(set(range(100)) - KEYLESS), answered

    # The same batch on the wire: the response's record_errors and error_message (Produce v8+).
    section = b"".join(record(i, key=None if i in KEYLESS else b"k%d" % i) for i in range(100))
    wire = Wire(side.bootstrap)
    try:
        part = _produce(wire, topic, raw_batch(section, 100, base_ts=_now()))
        old = _produce(wire, topic, raw_batch(section, 100, base_ts=_now()), version=7)
    finally:
        wire.close()
    assert part.error_code == INVALID_RECORD  # type: ignore[attr-defined]
    errors = [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]  # type: ignore[attr-defined]
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert errors == [(i, message) for i in sorted(KEYLESS)]
    assert part.error_message.startswith(  # type: ignore[attr-defined]
        "One or more records have been rejected due to 10 record errors in total, and only showing the "
        "first three errors at most: [RecordError(batchIndex=3, "
    )
    assert old.error_code == INVALID_RECORD  # type: ignore[attr-defined]  # v7: the code, no record errors
    assert _log_end(side, topic) == 0


def _record_result(results: dict[int, int], i: int, err: KafkaError | None, _msg: object) -> None:
    """A delivery report: record i's error code, 0 once stored."""
    results[i] = err.code() if err else 0


@dataclass(frozen=True)
class Sent:
    """What librdkafka's statistics say it sent: Produce requests (one batch each: one partition here) and
    the records they acknowledged or failed."""

    produce_requests: int
    retries: int  # requests sent again (a retried Produce is one batch sent twice, not a split)
    records: int


def _sent(statistics: list[dict[str, Any]], topic: str) -> Sent | None:
    """From the latest statistics (cumulative counters), once the topic appears in them."""
    if not statistics or topic not in statistics[-1]["topics"]:
        return None
    latest = statistics[-1]
    brokers = [b for b in latest["brokers"].values() if b["nodeid"] >= 0]
    requests = sum(b["req"].get("Produce", 0) for b in brokers)
    retries = sum(b["txretries"] for b in brokers)
    records = sum(p["txmsgs"] for p in latest["topics"][topic]["partitions"].values())
    return Sent(requests, retries, records)


def test_records_timestamped_too_far_ahead_are_named(side: Side) -> None:
    """KIP-937: message.timestamp.after.max.ms (one hour by default in Kafka 4) per record."""
    topic = _topic(side)
    section = record(0) + record(1, ts_delta=2 * 3_600_000) + record(2, ts_delta=1000)
    wire = Wire(side.bootstrap)
    try:
        part = _produce(wire, topic, raw_batch(section, 3, base_ts=_now()))
    finally:
        wire.close()
    assert part.error_code == INVALID_TIMESTAMP  # type: ignore[attr-defined]
    assert [e.batch_index for e in part.record_errors] == [1]  # type: ignore[attr-defined]
    assert "is out of range" in part.record_errors[0].batch_index_error_message  # type: ignore[attr-defined]
    assert part.error_message == "One or more records have been rejected due to invalid timestamp"  # type: ignore[attr-defined]
    assert _log_end(side, topic) == 0


def _hostile(now: int) -> dict[str, bytes]:
    """Batches with a valid CRC-32C that both brokers refuse with INVALID_RECORD."""
    three = b"".join(record(i, value=b"v" * 30) for i in range(3))
    return {
        "count 2^31-1 with 3 records": raw_batch(three, 2**31 - 1, base_ts=now),
        "count 5 with 3 records": raw_batch(three, 5, base_ts=now),
        "count 2 with 3 records": raw_batch(three, 2, base_ts=now),
        "count 3 but lastOffsetDelta 5": raw_batch(three, 3, last_offset_delta=5, base_ts=now),
        "negative record length": raw_batch(record(0) + record(1, length=-5), 2, base_ts=now),
        "key longer than its record": raw_batch(
            record(0) + record(1, key=b"k" * 40, length=20), 2, base_ts=now
        ),
        "negative header count": raw_batch(record(0) + record(1, headers=varint(-1)), 2, base_ts=now),
        "truncated records": raw_batch(three[:-7], 3, base_ts=now),
        "garbage records": raw_batch(b"\x07" * 64, 3, base_ts=now),
        "two batches": raw_batch(record(0), 1, base_ts=now) * 2,
        "a control batch": raw_batch(record(0), 1, attributes=0x20, base_ts=now),
        "no batch at all": b"",
    }


def test_hostile_batches_are_refused_and_leave_the_log_as_it_was(side: Side) -> None:
    topic = _topic(side)
    wire = Wire(side.bootstrap)
    try:
        codes = {name: _produce(wire, topic, raw).error_code for name, raw in _hostile(_now()).items()}  # type: ignore[attr-defined]
        assert codes == dict.fromkeys(codes, INVALID_RECORD)
        assert _log_end(side, topic) == 0
        # The partition goes on serving: the next good batch gets offset 0, and reads back.
        good = _produce(wire, topic, raw_batch(record(0, value=b"after") + record(1), 2, base_ts=_now()))
    finally:
        wire.close()
    assert (good.error_code, good.base_offset) == (0, 0)  # type: ignore[attr-defined]
    assert _log_end(side, topic) == 2


def test_zstd_needs_produce_v7(side: Side) -> None:
    """KIP-110: a zstd batch in Produce v3-6 is UNSUPPORTED_COMPRESSION_TYPE; from v7 it is stored."""
    topic = _topic(side)
    section = bytes(cramjam.zstd.compress(record(0) + record(1)))
    wire = Wire(side.bootstrap)
    try:
        old = _produce(wire, topic, raw_batch(section, 2, attributes=4, base_ts=_now()), version=6)
        new = _produce(wire, topic, raw_batch(section, 2, attributes=4, base_ts=_now()), version=7)
    finally:
        wire.close()
    assert old.error_code == UNSUPPORTED_COMPRESSION_TYPE  # type: ignore[attr-defined]
    assert (new.error_code, new.base_offset) == (0, 0)  # type: ignore[attr-defined]


def _peak_rss_bytes(pid: int) -> int:
    """VmHWM: the highest resident set size the process ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def test_a_zstd_bomb_costs_ebb_broker_no_memory(broker: EbbBroker) -> None:
    """16 KiB of zstd that decompress to 512 MiB of zeros, to a compacted and to a delete topic: refused
    (MESSAGE_TOO_LARGE), and the broker's peak memory does not move by more than a few MiB. Before the
    bound, the compacted topic's key check grew the broker by the whole 512 MiB."""
    side = Side("ebb-broker", broker.bootstrap)
    assert broker.proc is not None
    bomb = raw_batch(zstd_zeros(512), 1000, attributes=4, base_ts=_now())
    assert len(bomb) < 17 * 1024
    topics = [_topic(side, **{"cleanup.policy": "compact"}), _topic(side)]
    before = _peak_rss_bytes(broker.proc.pid)
    wire = Wire(side.bootstrap)
    try:
        codes = [_produce(wire, t, bomb).error_code for t in topics]  # type: ignore[attr-defined]
        good = _produce(wire, topics[1], raw_batch(record(0), 1, base_ts=_now()))
    finally:
        wire.close()
    grown = _peak_rss_bytes(broker.proc.pid) - before
    assert grown < 32 * 1024 * 1024, f"the broker's peak RSS grew by {grown >> 20} MiB"
    assert codes == [MESSAGE_TOO_LARGE, MESSAGE_TOO_LARGE]
    assert (good.error_code, good.base_offset) == (0, 0)  # type: ignore[attr-defined]
