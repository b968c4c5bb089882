"""The `__consumer_offsets` topic as the coordinator's durable store: append, and replay on start.

Kafka creates the topic compacted with 100 MiB segments (offsets.topic.segment.bytes) and one
partition per `offsets.topic.num.partitions`; a group's records all go to
`partition_for(group)`. Records are plain v2 batches with key and value, so the log cleaner
keeps the latest record per key and drops tombstones like any compacted topic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from ebb_broker.coordinator.offsets_records import OFFSETS_TOPIC, partition_for

if TYPE_CHECKING:
    from ebb_broker.log import LogManager

log = logging.getLogger(__name__)

OFFSETS_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
_READ_CHUNK = 1 << 20


class OffsetsStore:
    """Appends coordinator records and reads them back; owns no state of its own."""

    def __init__(self, logs: LogManager, partitions: int):
        self.logs = logs
        self.partitions = partitions

    def ensure_topic(self) -> None:
        """Create `__consumer_offsets` on first start; an existing one keeps its partition count."""
        existing = self.logs.topics().get(OFFSETS_TOPIC)
        if existing is None:
            log.info("creating %s with %d partitions", OFFSETS_TOPIC, self.partitions)
            self.logs.create_topic(OFFSETS_TOPIC, self.partitions, dict(OFFSETS_TOPIC_CONFIG))
        else:
            self.partitions = existing.partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partitions)

    def append(self, group_id: str, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append key/value records (value None = tombstone) for one group in one batch."""
        self.append_to(self.partition_for(group_id), records)

    def append_to(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append key/value records to one partition in one batch."""
        if not records:
            return
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 30)
        now = int(time.time() * 1000)
        for key, value in records:
            builder.append(now, key, value)
        builder.close()
        self.logs.get_log(OFFSETS_TOPIC, partition).append(bytes(builder.buffer()))

    def replay(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Every (partition, key, value) in log order, partition by partition (what a restart loads)."""
        for partition in range(self.partitions):
            plog = self.logs.get_log(OFFSETS_TOPIC, partition)
            offset = plog.log_start_offset
            while offset < plog.high_watermark:
                data = plog.read(offset, _READ_CHUNK).to_bytes()
                if not data:
                    break
                records = MemoryRecords(data)
                last = offset
                for batch in records:
                    for rec in batch:
                        if rec.offset >= offset and rec.key is not None:
                            value = None if rec.value is None else bytes(rec.value)
                            yield partition, bytes(rec.key), value
                        last = max(last, rec.offset + 1)
                    last = max(last, batch.next_offset)
                if last <= offset:
                    break
                offset = last
