"""The public log of one partition (Kafka's UnifiedLog): offsets, high watermark, log start offset, producers.

Produce path: the one batch a request carries for the partition is validated record by record
(``validator.py``, Kafka's LogValidator: framing, CRC-32C, count against the records decoded, record
structure, keys on compacted topics, timestamps, bounded decompression, the topic's compression.type),
the idempotent-producer sequence is checked, and its base offset is stamped (outside the CRC, so the
record bytes are not copied) before one ``pwritev`` puts it on disk.

Durability and acknowledgement: on a single node the high watermark equals the log end offset after every
append, so acks=all is satisfied once the write returns. The write has reached the OS page cache, which
survives a kill -9 of the process; fsync (``flush.messages`` / ``log.flush.interval.messages``, roll,
checkpoint and close) only matters for power loss, exactly as in Kafka, which also leaves durability to
replication rather than fsync.

Transactions (KIP-98): transactional batches open a transaction of their producer; the transaction
coordinator's COMMIT/ABORT marker (``append_marker``: a control batch, which the validator admits only
from ``AppendOrigin.COORDINATOR``) ends it. The last stable offset is the first offset of the oldest open
transaction (or the high watermark); an aborted transaction is recorded in the .txnindex of the segment
holding its marker, so a read_committed fetch gets the aborted ranges it overlaps.

Who moves the log start offset (``LogStartOffsetIncrementReason``): DeleteRecords (KIP-107, never
backwards, never past the high watermark) and retention (to the first surviving segment's base).

Thread-safety: every public method takes the log's lock; reads return file slices (paths + ranges) and do
their I/O outside it.
"""

from __future__ import annotations

import enum
import logging
import os
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log import files
from ebb_broker.log.errors import OffsetOutOfRangeError, PolicyViolationError
from ebb_broker.log.file_handles import LazyFile
from ebb_broker.log.local_log import LocalLog, ScheduleDelete, delete_now
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.log_loader import load_log
from ebb_broker.log.producer_state import CompletedTxn, ProducerEntry, ProducerStateManager
from ebb_broker.log.records import Record, encode_batch, read_end_txn_marker
from ebb_broker.log.retention import (
    CommittedOffsets,
    RetentionReason,
    RetentionResult,
    consumed_breach,
    deletable_segments,
    size_breach,
    start_offset_breach,
    time_breach,
)
from ebb_broker.log.segment import BatchInfo, Segment
from ebb_broker.log.transaction_index import AbortedTxn
from ebb_broker.log.validator import AppendOrigin, ValidatedBatch, validate_records
from ebb_formats.record_batch import ABORT, COMMIT, CONTROL_KEY, END_TXN_MARKER

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
# baseOffset, length, partitionLeaderEpoch: the 16 bytes before magic, outside the CRC, that the leader
# stamps (a single node is the leader of every partition at epoch 0, as Metadata reports).
_PREFIX = struct.Struct(">qii")
LEADER_EPOCH = 0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogStartOffsetIncrementReason(enum.Enum):
    CLIENT_RECORD_DELETION = "client-record-deletion"  # DeleteRecords (KIP-107)
    SEGMENT_DELETION = "segment-deletion"  # a retention pass removed the segments below


@dataclass(frozen=True)
class RecordsDeleted:
    """What DeleteRecords did to one partition: its low watermark (log start offset) before and after."""

    before: int
    low_watermark: int

    @property
    def count(self) -> int:
        """Offsets the move put below the low watermark (0: it was already there or beyond)."""
        return self.low_watermark - self.before


@dataclass(frozen=True)
class LogStartMove:
    """The log start offset of a partition moved from ``old`` to ``new``: the offsets in between left the
    log (DeleteRecords or retention; the cleaner never moves it)."""

    topic: str
    partition: int
    old: int
    new: int
    reason: str


@dataclass(frozen=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int


@dataclass(frozen=True)
class FetchSlice:
    """A byte range of a segment file the server may ``os.sendfile()``; ``file`` is the segment's own
    descriptor (``LazyFile.hold()`` keeps it open while a response sends from it)."""

    path: Path
    position: int
    length: int
    file: LazyFile

    def read_bytes(self) -> bytes:
        """The bytes; retention or the cleaner may have renamed the file to .deleted meanwhile."""
        for path in (self.path, self.path.with_name(self.path.name + files.DELETED)):
            try:
                with path.open("rb") as f:
                    return os.pread(f.fileno(), self.length, self.position)
            except FileNotFoundError:
                continue
        return b""


@dataclass(frozen=True)
class ReadResult:
    slices: list[FetchSlice]
    high_watermark: int
    log_start_offset: int

    def to_bytes(self) -> bytes:
        """For transports without sendfile."""
        return b"".join(s.read_bytes() for s in self.slices)


class Log:
    """One partition: see the module docstring for the rules it keeps."""

    def __init__(
        self,
        topic: str,
        partition: int,
        local: LocalLog,
        log_start_offset: int,
        producers: ProducerStateManager,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self._local = local
        self._log_start_offset = log_start_offset
        self._producers = producers
        self._lock = threading.RLock()
        self._unflushed_messages = 0
        self._last_flush_ms = local.clock()
        # Called with every move of the log start offset, by whichever thread made it, under the log's lock
        # (so before any reader can see the move): it must neither block nor call into the engine.
        self.on_log_start_move: Callable[[LogStartMove], None] | None = None

    @classmethod
    def open(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        clean_shutdown: bool = False,
        clock: Callable[[], int] = wall_clock_ms,
        schedule_delete: ScheduleDelete = delete_now,
    ) -> Log:
        """Open (and recover) the partition in ``directory``; creates it when missing."""
        loaded = load_log(
            directory,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            clean_shutdown=clean_shutdown,
            clock=clock,
        )
        local = LocalLog(
            directory,
            config,
            loaded.segments,
            loaded.next_offset,
            loaded.recovery_point,
            clock=clock,
            schedule_delete=schedule_delete,
        )
        return cls(topic, partition, local, loaded.log_start_offset, loaded.producer_state)

    # -- state --------------------------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._local.config

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self._local.config = config

    @property
    def directory(self) -> Path:
        return self._local.directory

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.next_offset

    @property
    def high_watermark(self) -> int:
        """On a single node every appended record is committed: HW == LEO."""
        return self._local.next_offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def local(self) -> LocalLog:
        """The segment layer, for the cleaner (which takes ``lock`` around every change)."""
        return self._local

    def segments(self) -> list[Segment]:
        with self._lock:
            return list(self._local.segments.snapshot())

    def size_in_bytes(self) -> int:
        with self._lock:
            return self._local.size_in_bytes()

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        with self._lock:
            return self._producers.entry(producer_id)

    def producer_last_offsets(self) -> set[int]:
        """Last offset of every known producer's newest batch: the cleaner keeps those batches (empty if
        need be) so sequence numbers survive compaction and restarts (Kafka's RETAIN_EMPTY)."""
        with self._lock:
            return self._producers.last_offsets()

    # -- append -------------------------------------------------------------------------------------------

    def validate(
        self, records: bytes | memoryview, *, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> ValidatedBatch:
        """What ``append`` checks first, alone: no lock, no state, so a large batch can be validated on a
        worker thread and appended afterwards (``append(validated)``)."""
        return validate_records(
            records,
            self.config,
            now_ms=self._local.clock(),
            topic_partition=f"{self.topic}-{self.partition}",
            origin=origin,
        )

    def append(
        self,
        records: bytes | memoryview | ValidatedBatch,
        *,
        now_ms: int | None = None,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Validate, stamp and append the one v2 batch a producer sent for this partition (or, with
        ``origin=COORDINATOR``, one the broker's coordinators built: transactional offset commits carry
        the producer's id and epoch but no sequence, markers are control batches, as Kafka's
        AppendOrigin.COORDINATOR).

        ``validator.validate_records`` checks the batch record by record (raising CorruptRecordError,
        InvalidRecordError, RecordValidationError or RecordTooLargeError);
        the idempotent-producer and transaction checks follow. Nothing is written unless everything passes.
        A batch ``validate`` already checked is not checked again.
        """
        return self._append(records, now_ms, origin)[0]

    def _append(
        self, records: bytes | memoryview | ValidatedBatch, now_ms: int | None, origin: AppendOrigin
    ) -> tuple[AppendInfo, CompletedTxn | None]:
        config = self.config
        now = now_ms if now_ms is not None else self._local.clock()
        batch = (
            records
            if isinstance(records, ValidatedBatch)
            else validate_records(
                records, config, now_ms=now, topic_partition=f"{self.topic}-{self.partition}", origin=origin
            )
        )
        header = batch.header
        append_time = config.message_timestamp_type == "LogAppendTime"
        with self._lock:
            if header.is_control:
                return self._append_marker_locked(batch, now, append_time)
            pending: dict[int, ProducerEntry] = {}
            dup = self._producers.check(header, pending)
            if dup is not None:
                info = AppendInfo(
                    dup.first_offset,
                    dup.last_offset,
                    dup.timestamp if append_time else -1,
                    self._log_start_offset,
                )
                return info, None
            base = self._local.next_offset
            stamped = header._replace(base_offset=base)
            self._producers.stage(stamped, pending, now)
            if header.is_transactional:
                self._producers.begin_txn(pending, header.producer_id, header.producer_epoch, base)
            last = stamped.last_offset
            self._write(batch, base, now)
            if pending:
                self._producers.commit(pending)
            return AppendInfo(base, last, now if append_time else -1, self._log_start_offset), None

    def _write(self, batch: ValidatedBatch, base: int, now: int) -> None:
        """Roll if due, stamp ``base`` into the batch's 16-byte prefix and write it; flush.messages."""
        header = batch.header
        last = base + header.last_offset_delta
        self._maybe_roll(batch.size, header.max_timestamp, last, now)
        self._local.append(
            [_PREFIX.pack(base, header.length, LEADER_EPOCH), batch.tail],
            [BatchInfo(batch.size, last, header.max_timestamp)],
        )
        self._unflushed_messages += header.count
        if self._unflushed_messages >= self.config.flush_messages:
            self._flush_locked(now)

    def _append_marker_locked(
        self, batch: ValidatedBatch, now: int, append_time: bool
    ) -> tuple[AppendInfo, CompletedTxn | None]:
        """A COMMIT or ABORT control batch (Kafka's ProducerAppendInfo.appendEndTxnMarker): it completes
        its producer's transaction here; an aborted one goes into the active segment's .txnindex."""
        header = batch.header
        marker = read_end_txn_marker(_PREFIX.pack(0, header.length, LEADER_EPOCH) + bytes(batch.tail), header)
        self._producers.check_marker(
            header.producer_id, header.producer_epoch, None if marker is None else marker[1]
        )
        base = self._local.next_offset
        self._write(batch, base, now)
        info = AppendInfo(base, base, now if append_time else -1, self._log_start_offset)
        if marker is None or header.producer_id < 0:
            return info, None
        control_type, coordinator_epoch = marker
        completed = self._producers.complete_txn(
            header.producer_id,
            header.producer_epoch,
            base,
            commit=control_type == COMMIT,
            coordinator_epoch=coordinator_epoch,
            timestamp=now,
        )
        if completed.aborted:
            unstable = self._producers.first_unstable_offset()
            lso = base + 1 if unstable is None else min(unstable, base + 1)
            self._local.active.txn_index.append(
                AbortedTxn(header.producer_id, completed.first_offset, completed.last_offset, lso)
            )
        return info, completed

    def _maybe_roll(self, incoming: int, max_ts: int, last_offset: int, now: int) -> None:
        config = self.config
        if self._local.active.should_roll(
            incoming_bytes=incoming,
            max_timestamp=max_ts,
            last_offset=last_offset,
            segment_bytes=config.segment_bytes,
            max_segment_ms=config.max_segment_ms,
            now_ms=now,
        ):
            self._local.roll()

    def roll(self) -> None:
        with self._lock:
            self._local.roll()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked(self._local.clock())

    def _flush_locked(self, now: int) -> None:
        self._local.flush()
        self._unflushed_messages = 0
        self._last_flush_ms = now

    def flush_if_due(self, now_ms: int | None = None) -> bool:
        """Kafka's LogManager.flushDirtyLogs for one log: fsync once ``flush.ms`` passed since the last
        flush and something was appended since. Returns whether it flushed."""
        with self._lock:
            now = self._local.clock() if now_ms is None else now_ms
            if self._unflushed_messages == 0 or now - self._last_flush_ms < self.config.flush_ms:
                return False
            self._flush_locked(now)
            return True

    # -- transactions (KIP-98) ----------------------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, or the high watermark: read_committed
        consumers read below it (Kafka's LSO)."""
        with self._lock:
            unstable = self._producers.first_unstable_offset()
            hw = self.high_watermark
            # DeleteRecords or retention may have removed an open transaction's first records: the LSO
            # never falls below the log start offset (Kafka bounds the first unstable offset likewise).
            return hw if unstable is None else max(min(unstable, hw), self._log_start_offset)

    def producers(self) -> dict[int, ProducerEntry]:
        """A copy of every known producer's state (DescribeProducers)."""
        with self._lock:
            return self._producers.entries()

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction (DescribeProducers, hanging-txn checks)."""
        with self._lock:
            return self._producers.ongoing()

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> CompletedTxn:
        """Append the transaction coordinator's COMMIT or ABORT marker (a control batch) for a producer,
        completing its transaction here (Kafka's appendAsLeader with origin COORDINATOR: the marker goes
        through the validator like any batch)."""
        now = now_ms if now_ms is not None else self._local.clock()
        batch = encode_batch(
            [
                Record(
                    0,
                    now,
                    CONTROL_KEY.pack(0, COMMIT if commit else ABORT),
                    END_TXN_MARKER.pack(0, coordinator_epoch),
                )
            ],
            base_offset=0,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partition_leader_epoch=LEADER_EPOCH,
            is_transactional=True,
            is_control=True,
        )
        _info, completed = self._append(batch, now, AppendOrigin.COORDINATOR)
        assert completed is not None
        return completed

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), for a read_committed fetch:
        the .txnindex entries of the segment holding ``fetch_offset`` and every later one."""
        with self._lock:
            out: list[AbortedTxn] = []
            for seg in self._local.segments.snapshot():
                if seg.next_offset <= fetch_offset and seg is not self._local.active:
                    continue
                if seg.base_offset >= upper_bound:
                    break
                out.extend(seg.txn_index.collect(fetch_offset, upper_bound))
            return out

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """producer.id.expiration.ms: forget producers idle that long with no open transaction."""
        with self._lock:
            return self._producers.remove_expired(now_ms, expiration_ms)

    # -- reads --------------------------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one_message: bool = True
    ) -> ReadResult:
        """Whole batches from the one holding ``offset`` (the last slice may end inside a batch, as in
        Kafka). Out of range below the log start offset or above the high watermark; empty at it.

        KIP-74: with ``min_one_message`` the first batch is returned whole even if larger than
        ``max_bytes``; without it, a first batch larger than ``max_bytes`` gives no records (Kafka's
        ReplicaManager replaces such an incomplete first entry with an empty one).
        """
        with self._lock:
            hw, start = self.high_watermark, self._log_start_offset
            if offset < start or offset > hw:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside [{start}, {hw}] of {self.topic}-{self.partition}"
                )
            limit = hw if max_offset is None else min(max_offset, hw)
            slices: list[FetchSlice] = []
            if offset >= limit:
                return ReadResult(slices, hw, start)
            remaining = max_bytes
            for seg in self._local.segments.from_offset(offset):
                max_position = None
                if limit < seg.next_offset:
                    found = seg.translate_offset(limit)
                    max_position = found[0] if found is not None else None
                if not slices and not min_one_message:
                    first = seg.translate_offset(offset)
                    too_big = first is not None and first[1].size > remaining
                    if too_big and first is not None and (max_position is None or first[0] < max_position):
                        break  # the first batch does not fit: no records rather than part of one
                got = seg.read(offset, remaining, max_position=max_position, min_one_batch=not slices)
                if got is None:
                    if max_position is not None:
                        break  # the limit lies in this segment: nothing below it is left
                    continue  # a compaction gap at the end of this segment: go on to the next one
                pos, length = got
                slices.append(FetchSlice(seg.log_path, pos, length, seg.file))
                remaining -= length
                end = seg.size if max_position is None else max_position
                if remaining <= 0 or pos + length < end or (max_position is not None):
                    break
                offset = seg.next_offset
            return ReadResult(slices, hw, start)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: ``(offset, timestamp)`` of the first record at or after ``timestamp``.

        -2 EARLIEST (the log start offset), -1 LATEST (the high watermark), -3 MAX_TIMESTAMP (KIP-734; the
        first record carrying the largest timestamp, found as Kafka 4 does from the segment's
        offsetOfMaxTimestamp), -4 EARLIEST_LOCAL (= EARLIEST here).
        """
        with self._lock:
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return self._log_start_offset, -1
            if timestamp == LATEST_TIMESTAMP:
                return self.high_watermark, -1
            segs = list(self._local.segments.snapshot())
            if timestamp == MAX_TIMESTAMP:
                best = max(segs, key=lambda s: s.max_timestamp_so_far)
                found = best.max_timestamp_record()
                if found is None:
                    return None
                return max(found[0], self._log_start_offset), found[1]
            if timestamp < 0:
                raise OffsetOutOfRangeError(f"unknown special timestamp {timestamp}")
            for seg in segs:
                if seg.max_timestamp_so_far < timestamp:
                    continue
                found = seg.find_offset_by_timestamp(timestamp, self._log_start_offset)
                if found is not None:
                    return found
            return None

    # -- log start offset (KIP-107) -----------------------------------------------------------------------

    def delete_records(self, offset: int) -> RecordsDeleted:
        """DeleteRecords: move the log start offset to ``offset``, -1 meaning the high watermark, both read
        under the log's lock. Idempotent; never backwards; refused on compact-only topics. Durable once
        log-start-offset-checkpoint is written: `LogManager.delete_records` does that for the moves it
        makes."""
        with self._lock:
            if not self.config.delete:
                raise PolicyViolationError(
                    f"records of {self.topic} cannot be deleted: cleanup.policy={self.config.cleanup_policy}"
                )
            if offset == -1:
                offset = self.high_watermark
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot delete records before negative offset {offset}")
            before = self._log_start_offset
            self.maybe_increment_log_start_offset(
                offset, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION
            )
            return RecordsDeleted(before, self._log_start_offset)

    def maybe_increment_log_start_offset(self, new: int, reason: LogStartOffsetIncrementReason) -> bool:
        """Raise the log start offset (never past the high watermark, never backwards)."""
        with self._lock:
            if new > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {new}: "
                    f"past the high watermark {self.high_watermark}"
                )
            if new <= self._log_start_offset:
                return False
            log.info(
                "log start offset of %s-%s: %d -> %d (%s)",
                self.topic,
                self.partition,
                self._log_start_offset,
                new,
                reason.value,
            )
            self._moved(new, reason.value)
            return True

    def _moved(self, new: int, reason: str) -> None:
        """Set the log start offset (the caller holds the lock) and tell ``on_log_start_move``."""
        old, self._log_start_offset = self._log_start_offset, new
        if self.on_log_start_move is not None:
            self.on_log_start_move(LogStartMove(self.topic, self.partition, old, new, reason))

    # -- retention ------------------------------------------------------------------------------------------

    def delete_old_segments(
        self, *, now_ms: int | None = None, committed: CommittedOffsets | None = None
    ) -> RetentionResult:
        """One retention pass (see ebb_broker.log.retention): start-offset breach, then for policies with
        ``delete`` consumed retention (KIP-68), size and time. Always a prefix, never at or past the HW."""
        result = RetentionResult()
        with self._lock:
            now = self._local.clock() if now_ms is None else now_ms
            config = self.config
            self._delete(
                start_offset_breach(self._log_start_offset, self.log_end_offset),
                RetentionReason.LOG_START_OFFSET_BREACH,
                result,
            )
            if not config.delete:
                return result
            if config.retention_commitoffset_ms >= 0:
                if committed is None or not committed.known:
                    result.consumed_skipped = True
                elif (
                    consumed := committed.consumed_up_to(
                        self.topic, self.partition, config.consumed_retention_groups, self.log_end_offset
                    )
                ) is not None:
                    self._delete(
                        consumed_breach(now, config.retention_commitoffset_ms, consumed, self.log_end_offset),
                        RetentionReason.CONSUMED,
                        result,
                    )
            if config.retention_bytes >= 0:
                self._delete(
                    size_breach(self._local.size_in_bytes(), config.retention_bytes),
                    RetentionReason.SIZE,
                    result,
                )
            if config.retention_ms >= 0:
                self._delete(time_breach(now, config.retention_ms), RetentionReason.TIME, result)
        return result

    def _delete(
        self,
        predicate: Callable[[Segment, Segment | None], bool],
        reason: RetentionReason,
        result: RetentionResult,
    ) -> None:
        segs = self._local.segments.snapshot()
        doomed = deletable_segments(segs, self.log_end_offset, self.high_watermark, predicate)
        if not doomed:
            return
        if len(doomed) == len(segs):
            self._local.roll()  # never leave a log without segments: start an empty one at the LEO
        survivor = self._local.segments.higher(doomed[-1].base_offset)
        assert survivor is not None
        result.add(reason, doomed)
        # Kafka moves the log start offset before unmapping anything, so no reader sees a hole.
        if survivor.base_offset > self._log_start_offset:
            self._moved(survivor.base_offset, reason.value)
        log.info(
            "retention (%s) deletes %d segment(s) of %s-%s below offset %d",
            reason.value,
            len(doomed),
            self.topic,
            self.partition,
            survivor.base_offset,
        )
        self._local.remove_and_delete(doomed)

    # -- lifecycle ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and close; the time index gets its final entry so the largest timestamp survives."""
        with self._lock:
            self._local.active.on_become_inactive()
            self._local.flush()
            for seg in self._local.segments:
                seg.flush()
            self._local.close()

    def abandon(self) -> None:
        """Close file descriptors without flushing: what a crash leaves behind (tests)."""
        with self._lock:
            self._local.close()

    def __repr__(self) -> str:
        return (
            f"Log({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._local.segments)})"
        )
