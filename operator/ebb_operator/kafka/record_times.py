"""The timestamp of the record at an offset, read from the record itself.

ListOffsets answers an offset for a time (KIP-79), never a time for an offset, so how old the oldest record
a group has not read is takes reading that record: one Fetch per leader for many partitions at once, each
from its offset. Fetch v4-12 (topics by name; v13+ name them by id), `read_uncommitted` (a record of an open
transaction is still a record nobody has read), at most PARTITION_MAX_BYTES per partition. The answer holds
the batch with the offset; its records before the offset are skipped, and control batches (transaction
markers, no user record) too. The timestamp is the record's (CreateTime), or its batch's append time for a
topic with `message.timestamp.type=LogAppendTime`.

A batch larger than PARTITION_MAX_BYTES comes back cut short (only the first partition of an answer gets its
first batch whole, KIP-74), so such a partition is asked again alone; a partition whose answer still holds no
record from its offset on (the log start passed it meanwhile, or only markers follow) has no timestamp.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka.errors import for_code
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.record.memory_records import MemoryRecords

from ebb_operator.kafka.results import KafkaFailure, TopicPartition

MAX_VERSION = 12
PARTITION_MAX_BYTES = 64 * 1024
PARTITIONS_PER_REQUEST = 500
READ_UNCOMMITTED = 0


def request(positions: Sequence[tuple[TopicPartition, int]]) -> Any:
    """One Fetch of the records at `positions`, answered at once (no wait for new data)."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for tp, offset in positions:
        by_topic.setdefault(tp.topic, []).append((tp.partition, offset))
    topic = FetchRequest.FetchTopic
    part = topic.FetchPartition
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=PARTITIONS_PER_REQUEST * PARTITION_MAX_BYTES,
        isolation_level=READ_UNCOMMITTED,
        topics=[
            topic(
                topic=name,
                partitions=[
                    part(partition=p, fetch_offset=o, partition_max_bytes=PARTITION_MAX_BYTES)
                    for p, o in parts
                ],
            )
            for name, parts in by_topic.items()
        ],
        max_version=MAX_VERSION,
    )


def first_timestamp(records: bytes | None, offset: int) -> int | None:
    """The timestamp of the first record at or after `offset` in a Fetch answer's record bytes; None when
    they hold no whole such record."""
    if not records:
        return None
    batches = MemoryRecords(bytes(records))
    while (batch := batches.next_batch()) is not None:
        if getattr(batch, "is_control_batch", False):
            continue
        for record in batch:
            if record.offset >= offset:
                return int(record.timestamp)
    return None


def timestamps(
    response: Any, positions: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int | KafkaFailure | None]:
    """Per partition asked: the timestamp of its record, the partition's error, or None (no whole record
    in the answer: ask it alone)."""
    out: dict[TopicPartition, int | KafkaFailure | None] = {}
    for t in response.responses:
        for p in t.partitions:
            tp = TopicPartition(t.topic, p.partition_index)
            if tp not in positions:
                continue
            if p.error_code:
                cls = for_code(p.error_code)
                out[tp] = KafkaFailure(str(cls.message), f"fetching {tp}", bool(cls.retriable))
            else:
                out[tp] = first_timestamp(p.records, positions[tp])
    return out


def batches(positions: Iterable[tuple[TopicPartition, int]]) -> list[list[tuple[TopicPartition, int]]]:
    ordered = sorted(positions)
    return [ordered[i : i + PARTITIONS_PER_REQUEST] for i in range(0, len(ordered), PARTITIONS_PER_REQUEST)]
