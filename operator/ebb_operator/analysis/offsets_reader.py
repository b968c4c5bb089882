"""Read raw records of `__consumer_offsets`: the one place besides `ebb_operator.kafka` that opens a client.

Why a second place: this runs inside Spark executors, one offset range per task, and must stream millions
of records with a plain consumer (assign + seek, no group) rather than the operator's admin adapter,
which has no consume call and holds admin connections an executor must not open per task. It uses the
same client library (kafka-python) and the adapter's `ClusterConnection`, so security settings are the
same.

`isolation.level=read_committed`: offsets committed inside a transaction that was aborted never reach
the plan (Kafka's coordinator replays only committed transactional offset commits).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from ebb_formats.consumer_offsets import OFFSETS_TOPIC
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


def _consumer(connection: ClusterConnection) -> KafkaConsumer:
    return KafkaConsumer(
        **connection.client_config(),
        group_id=None,  # assign + seek: no group, no commits
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        max_poll_records=5000,
    )


def offset_ranges(
    connection: ClusterConnection,
    *,
    topic: str = OFFSETS_TOPIC,
    max_records_per_range: int = 1_000_000,
    timeout: float = 30.0,
) -> list[OffsetRange]:
    """Split every partition of `topic` into ranges of at most `max_records_per_range` offsets, up to
    the last stable offset (a read_committed consumer's end: open transactions are not read)."""
    consumer = _consumer(connection)
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise OffsetsReadError(f"cannot list the partitions of {topic}")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        try:
            lows = consumer.beginning_offsets(tps, timeout_ms=int(timeout * 1000))
            highs = consumer.end_offsets(tps, timeout_ms=int(timeout * 1000))
        except KafkaError as e:
            raise OffsetsReadError(f"cannot read the offsets of {topic}: {e}") from e
        ranges: list[OffsetRange] = []
        for tp in tps:
            for start in range(lows[tp], highs[tp], max_records_per_range):
                ranges.append(
                    OffsetRange(topic, tp.partition, start, min(start + max_records_per_range, highs[tp]))
                )
        return ranges
    finally:
        consumer.close()


def read_range(
    connection: ClusterConnection, rng: OffsetRange, *, idle_timeout: float = 30.0
) -> Iterator[RawRecord]:
    """Every committed record of the range, in offset order. Raises if the broker stops answering."""
    consumer = _consumer(connection)
    tp = TopicPartition(rng.topic, rng.partition)
    try:
        consumer.assign([tp])
        consumer.seek(tp, rng.start)
        last_progress = time.monotonic()
        while consumer.position(tp, timeout_ms=int(idle_timeout * 1000)) < rng.end:
            records = consumer.poll(timeout_ms=1000).get(tp, [])
            if not records:
                if time.monotonic() - last_progress > idle_timeout:
                    raise OffsetsReadError(
                        f"no data from {rng.topic}-{rng.partition} for {idle_timeout:.0f}s "
                        f"while reading offsets {rng.start}..{rng.end}"
                    )
                continue
            last_progress = time.monotonic()
            for m in records:
                if m.offset >= rng.end:
                    return
                yield RawRecord(rng.partition, m.offset, m.key, m.value)
    except KafkaError as e:
        raise OffsetsReadError(f"reading {rng.topic}-{rng.partition}: {e}") from e
    finally:
        consumer.close()
