"""A coordinator's internal topic as its durable store: append, and replay on start.

`__consumer_offsets` (the group coordinator's) and `__transaction_state` (the transaction
coordinator's) are both created as Kafka creates them: compacted, 100 MiB segments
(offsets.topic.segment.bytes / transaction.state.log.segment.bytes), with a configured number of
partitions; a key's records all go to `partition_for(group or transactional id)`. Records are plain v2
batches with key and value, so the log cleaner keeps the latest record per key and drops tombstones like
any compacted topic; the group coordinator also writes transactional offset commits (the producer's id
and epoch, KIP-98), which the transaction coordinator's markers commit or abort.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from ebb_broker.log.records import Record, encode_batch
from ebb_broker.log.validator import AppendOrigin
from ebb_formats.consumer_offsets import OFFSETS_TOPIC, partition_for
from ebb_formats.record_batch import control_type

if TYPE_CHECKING:
    from ebb_broker.log import LogManager

log = logging.getLogger(__name__)

OFFSETS_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
_READ_CHUNK = 1 << 20


@dataclass(frozen=True)
class StoredRecord:
    """One record read back, with what its batch says about it."""

    partition: int
    key: bytes
    value: bytes | None  # None: a tombstone (or a marker)
    producer_id: int = -1
    transactional: bool = False
    marker: int | None = None  # a transaction marker's ControlRecordType (record_batch.COMMIT, ...); key b""


class OffsetsStore:
    """Appends coordinator records and reads them back; owns no state of its own."""

    def __init__(
        self,
        logs: LogManager,
        partitions: int,
        *,
        topic: str = OFFSETS_TOPIC,
        topic_config: Mapping[str, str] = OFFSETS_TOPIC_CONFIG,
    ):
        self.logs = logs
        self.partitions = partitions
        self.topic = topic
        self.topic_config = dict(topic_config)

    def exists(self) -> bool:
        return self.topic in self.logs.topics()

    def ensure_topic(self) -> None:
        """Create the topic on first use; an existing one keeps its partition count."""
        existing = self.logs.topics().get(self.topic)
        if existing is None:
            log.info("creating %s with %d partitions", self.topic, self.partitions)
            self.logs.create_topic(self.topic, self.partitions, dict(self.topic_config))
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
        self.logs.get_log(self.topic, partition).append(
            bytes(builder.buffer()), origin=AppendOrigin.COORDINATOR
        )

    def append_transactional(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        records: Sequence[tuple[bytes, bytes | None]],
        now_ms: int,
    ) -> None:
        """Append records as part of a producer's transaction (TxnOffsetCommit): a transactional batch
        with its id and epoch and no sequence, as Kafka's coordinator writes them."""
        batch = encode_batch(
            [Record(i, now_ms, key, value) for i, (key, value) in enumerate(records)],
            base_offset=0,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
        )
        self.logs.get_log(self.topic, self.partition_for(group_id)).append(
            batch, origin=AppendOrigin.COORDINATOR
        )

    def replay(self) -> Iterator[StoredRecord]:
        """Every record in log order, partition by partition (what a restart loads back)."""
        for partition in range(self.partitions):
            plog = self.logs.get_log(self.topic, partition)
            offset = plog.log_start_offset
            while offset < plog.high_watermark:
                data = plog.read(offset, _READ_CHUNK).to_bytes()
                if not data:
                    break
                records = MemoryRecords(data)
                last = offset
                for batch in records:
                    control = batch.is_control_batch
                    txn = batch.is_transactional
                    for rec in batch:
                        if rec.offset >= offset and rec.key is not None:
                            if control:
                                kind = control_type(bytes(rec.key))
                                yield StoredRecord(partition, b"", None, batch.producer_id, True, kind)
                            else:
                                value = None if rec.value is None else bytes(rec.value)
                                yield StoredRecord(
                                    partition, bytes(rec.key), value, batch.producer_id if txn else -1, txn
                                )
                        last = max(last, rec.offset + 1)
                    last = max(last, batch.next_offset)
                if last <= offset:
                    break
                offset = last
