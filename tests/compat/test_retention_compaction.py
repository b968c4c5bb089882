"""Compaction and KIP-68 consumed retention, observed through the Kafka protocol only."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker

FAST_BACKGROUND = {"log.cleaner.backoff.ms": "200", "log.retention.check.interval.ms": "300"}


def _create(bootstrap: str, topic: str, configs: dict[str, str], partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it alive until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(30)


def _produce(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, list | None]]
) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for key, value, headers in records:
        p.produce(topic, value=value, key=key, partition=0, headers=headers)
        p.flush(10)  # one batch per record, so segments roll at small segment.bytes


def _read(bootstrap: str, topic: str) -> list[tuple[int | None, bytes | None, bytes | None, tuple]]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{time.monotonic_ns()}",
            "enable.auto.commit": False,
        }
    )
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, low)])
        out: list[tuple[int | None, bytes | None, bytes | None, tuple]] = []

        def read_to_high_watermark() -> bool:
            msg = c.poll(0.3)
            if msg is not None and not msg.error():
                out.append((msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ())))
            return bool(out) and (out[-1][0] or 0) >= high - 1

        if high > low:
            until(f"{topic} read to its high watermark {high}", read_to_high_watermark, 20, interval=0)
        return out
    finally:
        close_within(c)


def test_compacted_topic_keeps_latest_value_per_key_and_explicit_tombstones(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    b = broker_factory(FAST_BACKGROUND)
    compact = {
        "cleanup.policy": "compact",
        "segment.bytes": "400",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "3600000",
    }
    _create(b.bootstrap, "compacted", {**compact, "tombstone.null.value.enable": "false"})
    _create(b.bootstrap, "young", {**compact, "min.compaction.lag.ms": "3600000"})
    records: list[tuple[bytes | None, bytes | None, list | None]] = []
    for round_ in range(4):
        for k in range(3):
            records.append((f"k{k}".encode(), f"v{round_}".encode(), None))
    records.append((b"k1", b"goodbye-payload", [("ebb.tombstone", b"")]))  # KIP-87 explicit tombstone
    records.append((b"k2", None, None))  # null value, not a tombstone on this topic
    records += [(b"filler", f"f{i}".encode(), None) for i in range(6)]  # roll past the dirty records
    _produce(b.bootstrap, "compacted", records)
    _produce(b.bootstrap, "young", records)

    def compacted() -> bool:
        keys = [r[1] for r in _read(b.bootstrap, "compacted") if r[1] != b"filler"]
        return len(keys) == len(set(keys))

    until("every key compacted to one record", compacted, 30, 0.3)
    # The cleaner has looked at every log at least twice since: "young" was a candidate and was left alone.
    checks = b.metric("ebb_cleaner_checks_total")
    until("two more cleaner checks", lambda: b.metric("ebb_cleaner_checks_total") >= checks + 2, 30, 0.3)
    latest = {r[1]: r for r in _read(b.bootstrap, "compacted")}
    assert latest[b"k0"][2] == b"v3"
    # The explicit tombstone keeps its payload until delete.retention.ms after cleaning.
    assert latest[b"k1"][2] == b"goodbye-payload"
    assert ("ebb.tombstone", b"") in latest[b"k1"][3]
    # With tombstone.null.value.enable=false a null value is an ordinary (latest) value.
    assert b"k2" in latest and latest[b"k2"][2] is None
    # Nothing younger than min.compaction.lag.ms was touched.
    assert len(_read(b.bootstrap, "young")) == len(records)


def test_consumed_retention_deletes_consumed_segments_and_keeps_the_rest(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    b = broker_factory({**FAST_BACKGROUND, "log.segment.delete.delay.ms": "0"})
    _create(
        b.bootstrap,
        "consumed",
        {
            "segment.bytes": "300",
            "retention.commitoffset.ms": "500",
            "retention.commitoffset.groups": "reader",
            "file.delete.delay.ms": "0",
        },
    )
    _produce(b.bootstrap, "consumed", [(None, f"r{i}".encode() * 5, None) for i in range(30)])
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    low_before = _earliest(admin, "consumed")
    assert low_before == 0
    time.sleep(0.6)  # age the records past retention.commitoffset.ms (500 ms)
    passes = b.metric("ebb_retention_passes_total")
    until("two more retention passes", lambda: b.metric("ebb_retention_passes_total") >= passes + 2, 30, 0.3)
    # Two retention passes saw consumed-old records that no group has committed: nothing may go.
    assert _earliest(admin, "consumed") == 0
    assert b.metric("ebb_retention_segments_deleted_total", rule="consumed") == 0

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("consumed", 0, 15)], asynchronous=False)
    close_within(c)
    until("consumed records deleted", lambda: _earliest(admin, "consumed") > 0, 30, 0.3)
    low = _earliest(admin, "consumed")
    assert 0 < low <= 15, "only segments wholly below the committed offset may go"
    # A pass moves the log start as it goes and counts its deletions when it ends: wait for the count.
    until(
        "a segment deleted by consumed retention",
        lambda: b.metric("ebb_retention_segments_deleted_total", rule="consumed") > 0,
        30,
        0.3,
    )
    kept = _read(b.bootstrap, "consumed")
    assert [r[0] for r in kept] == list(range(low, 30))


def test_consumed_retention_never_counts_an_open_or_aborted_transactional_commit(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    """KIP-68 with transactions (KIP-98/447): offsets committed inside a transaction hold nothing back and
    free nothing until the transaction commits; while it is open, and after it aborts, the consumed
    records stay."""
    b = broker_factory({**FAST_BACKGROUND, "log.segment.delete.delay.ms": "0"})
    _create(
        b.bootstrap,
        "consumed-txn",
        {
            "segment.bytes": "300",
            "retention.commitoffset.ms": "500",
            "retention.commitoffset.groups": "txn-reader",
            "file.delete.delay.ms": "0",
        },
    )
    _produce(b.bootstrap, "consumed-txn", [(None, f"r{i}".encode() * 5, None) for i in range(30)])
    time.sleep(0.6)  # age the records past retention.commitoffset.ms (500 ms)
    group = Consumer(
        {"bootstrap.servers": b.bootstrap, "group.id": "txn-reader", "enable.auto.commit": False}
    )
    producer = Producer(
        {"bootstrap.servers": b.bootstrap, "transactional.id": "txn-reader-app", "linger.ms": 0}
    )
    producer.init_transactions(30)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    try:
        offsets = [TopicPartition("consumed-txn", 0, 30)]
        producer.begin_transaction()
        producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), 30)
        passes = b.metric("ebb_retention_passes_total")
        until(
            "two more retention passes", lambda: b.metric("ebb_retention_passes_total") >= passes + 2, 30, 0.3
        )
        assert _earliest(admin, "consumed-txn") == 0, "an open transactional commit freed records"
        producer.abort_transaction(30)
        passes = b.metric("ebb_retention_passes_total")
        until(
            "two more retention passes", lambda: b.metric("ebb_retention_passes_total") >= passes + 2, 30, 0.3
        )
        assert _earliest(admin, "consumed-txn") == 0, "an aborted transactional commit freed records"
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition("consumed-txn", 0, 15)], group.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        until(
            "committed-then-consumed records deleted", lambda: _earliest(admin, "consumed-txn") > 0, 30, 0.3
        )
        assert 0 < _earliest(admin, "consumed-txn") <= 15
    finally:
        producer.flush(10)
        close_within(group)


def _earliest(admin: AdminClient, topic: str) -> int:
    from confluent_kafka.admin import OffsetSpec

    futs = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    return int(next(iter(futs.values())).result(10).offset)
