"""Read raw records of `__consumer_offsets`: the one place besides `ebb_operator.kafka` that opens a client.

Why a second place: this runs inside Spark executors, one offset range per task, and must stream millions
of records with a plain consumer (assign + seek, no group) rather than the operator's admin adapter,
which has no consume call and holds admin connections an executor must not open per task. It shares the
adapter's `ClusterConnection`, so security settings are the same.

`isolation.level=read_committed`: offsets committed inside a transaction that was aborted never reach
the plan (Kafka's coordinator replays only committed transactional offset commits).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from ebb_operator.analysis.offsets_records import OFFSETS_TOPIC
from ebb_operator.kafka import ClusterConnection


class OffsetsReadError(RuntimeError):
    """`__consumer_offsets` could not be read completely; the plan must not be computed from a part of it."""


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one partition of the offsets topic: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class RawRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _consumer(connection: ClusterConnection) -> Consumer:
    return Consumer(
        {
            **connection.librdkafka_config(),
            # A group id is mandatory for librdkafka consumers; with assign() and no commits it never joins.
            "group.id": "ebb-analysis-reader",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )


def offset_ranges(
    connection: ClusterConnection,
    *,
    topic: str = OFFSETS_TOPIC,
    max_records_per_range: int = 1_000_000,
    timeout: float = 30.0,
) -> list[OffsetRange]:
    """Split every partition of `topic` into ranges of at most `max_records_per_range` offsets."""
    consumer = _consumer(connection)
    try:
        md = consumer.list_topics(topic, timeout=timeout)
        meta = md.topics.get(topic)
        if meta is None or (meta.error is not None and meta.error.code() != KafkaError.NO_ERROR):
            raise OffsetsReadError(f"cannot list partitions of {topic}: {meta.error if meta else 'absent'}")
        ranges: list[OffsetRange] = []
        for p in sorted(meta.partitions):
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            except KafkaException as e:
                raise OffsetsReadError(f"cannot read the offsets of {topic}-{p}: {e}") from e
            for start in range(low, high, max_records_per_range):
                ranges.append(OffsetRange(topic, p, start, min(start + max_records_per_range, high)))
        return ranges
    finally:
        consumer.close()


def read_range(
    connection: ClusterConnection, rng: OffsetRange, *, idle_timeout: float = 30.0, batch: int = 5000
) -> Iterator[RawRecord]:
    """Every committed record of the range, in offset order. Raises if the broker stops answering."""
    consumer = _consumer(connection)
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        last_progress = time.monotonic()
        while True:
            msgs = consumer.consume(num_messages=batch, timeout=1.0)
            if not msgs:
                if time.monotonic() - last_progress > idle_timeout:
                    raise OffsetsReadError(
                        f"no data from {rng.topic}-{rng.partition} for {idle_timeout:.0f}s "
                        f"while reading offsets {rng.start}..{rng.end}"
                    )
                continue
            last_progress = time.monotonic()
            for m in msgs:
                err = m.error()
                if err is not None:
                    # End of what a read_committed consumer may see (the last stable offset): done.
                    if err.code() == KafkaError._PARTITION_EOF:
                        return
                    raise OffsetsReadError(f"reading {rng.topic}-{rng.partition}: {err}")
                offset = m.offset()
                if offset is None:  # only error events have no offset, and those were handled above
                    continue
                if offset >= rng.end:
                    return
                yield RawRecord(rng.partition, offset, m.key(), m.value())
                if offset >= rng.end - 1:
                    return
    finally:
        consumer.close()
