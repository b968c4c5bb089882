"""The public log of one partition (Kafka's UnifiedLog): offsets, high watermark, log start offset, producers.

Produce path: a request's batches stay opaque bytes. Each one gets its header, magic and CRC-32C checked,
the idempotent-producer sequence checked, and its base offset stamped (outside the CRC, so the record
bytes are never copied) before one ``pwritev`` puts the request on disk. Records are decoded only on
compacted topics (a record without key is refused, as Kafka's LogValidator does).

Durability and acknowledgement: on a single node the high watermark equals the log end offset after every
append, so acks=all is satisfied once the write returns. The write has reached the OS page cache, which
survives a kill -9 of the process; fsync (``flush.messages`` / ``log.flush.interval.messages``, roll,
checkpoint and close) only matters for power loss, exactly as in Kafka, which also leaves durability to
replication rather than fsync.

Transactions (KIP-98): transactional batches open a transaction of their producer; the transaction
coordinator's COMMIT/ABORT marker (``append_marker``) ends it. The last stable offset is the first offset
of the oldest open transaction (or the high watermark); an aborted transaction is recorded in the .txnindex
of the segment holding its marker, so a read_committed fetch gets the aborted ranges it overlaps.

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
from ebb_broker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    RecordTooLargeError,
)
from ebb_broker.log.local_log import LocalLog, ScheduleDelete, delete_now
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.log_loader import load_log
from ebb_broker.log.producer_state import (
    ABORT,
    COMMIT,
    CompletedTxn,
    ProducerEntry,
    ProducerStateManager,
)
from ebb_broker.log.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    decode_records,
    encode_batch,
    set_log_append_time,
    validate_batch,
)
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

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
# baseOffset, length, partitionLeaderEpoch: the 16 bytes before magic, outside the CRC, that the leader
# stamps (a single node is the leader of every partition at epoch 0, as Metadata reports).
_PREFIX = struct.Struct(">qii")
LEADER_EPOCH = 0
# A control record: key = version int16 + ControlRecordType int16; value = EndTransactionMarker
# (version int16, coordinatorEpoch int32).
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogStartOffsetIncrementReason(enum.Enum):
    CLIENT_RECORD_DELETION = "client-record-deletion"  # DeleteRecords (KIP-107)
    SEGMENT_DELETION = "segment-deletion"  # a retention pass removed the segments below


@dataclass(frozen=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int


@dataclass(frozen=True)
class FetchSlice:
    """A byte range of a segment file the server may ``os.sendfile()``."""

    path: Path
    position: int
    length: int

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
        # Called (outside the lock) after DeleteRecords moved the log start offset; the LogManager writes
        # log-start-offset-checkpoint then, so a deletion it acknowledged survives a crash.
        self.on_log_start_offset_change: Callable[[Log], None] | None = None

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

    def append(
        self, records: bytes | memoryview, *, now_ms: int | None = None, coordinator: bool = False
    ) -> AppendInfo:
        """Validate, stamp and append one or more v2 batches as received from a producer (or, with
        ``coordinator``, written by the broker's group coordinator: transactional offset commits carry
        the producer's id and epoch but no sequence, as Kafka's AppendOrigin.COORDINATOR).

        Raises CorruptRecordError, RecordTooLargeError, InvalidRecordError (a client's control batch, a
        transactional batch without producer id) and the idempotence errors; nothing is written unless
        every batch passes.
        """
        view = memoryview(records).cast("B") if not isinstance(records, bytes) else memoryview(records)
        end = len(view)
        if end == 0:
            raise CorruptRecordError("produce request without record batches")
        config = self.config
        headers: list[tuple[int, BatchHeader]] = []
        pos = 0
        while pos < end:
            if end - pos < LOG_OVERHEAD:
                raise CorruptRecordError(f"{end - pos} stray bytes after the last batch")
            header = validate_batch(view, pos, end)
            if header.size > config.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {header.size} bytes exceeds max.message.bytes={config.max_message_bytes}"
                )
            if header.size > config.segment_bytes:
                raise RecordTooLargeError(
                    f"batch of {header.size} bytes exceeds segment.bytes={config.segment_bytes}"
                )
            if header.is_control:
                raise InvalidRecordError(
                    f"Clients are not allowed to write control records in {self.topic}-{self.partition}"
                )
            if header.is_transactional and (
                header.producer_id < 0 or (header.base_sequence < 0 and not coordinator)
            ):
                raise InvalidRecordError("a transactional batch needs a producer id and a sequence")
            if header.count != header.last_offset_delta + 1:
                raise CorruptRecordError(
                    f"batch count {header.count} does not match lastOffsetDelta {header.last_offset_delta}"
                )
            if config.compact:
                for record in decode_records(view[pos : pos + header.size], header):
                    if record.key is None:
                        raise InvalidRecordError(
                            f"compacted topic {self.topic} refuses a record without key (offset delta "
                            f"{record.offset - header.base_offset})"
                        )
            headers.append((pos, header))
            pos += header.size
        append_time = config.message_timestamp_type == "LogAppendTime"
        with self._lock:
            now = now_ms if now_ms is not None else self._local.clock()
            pending: dict[int, ProducerEntry] = {}
            for i, (_pos, header) in enumerate(headers):
                dup = self._producers.check(header, pending)
                if dup is not None:
                    if i == 0 and len(headers) == 1:
                        return AppendInfo(
                            dup.first_offset,
                            dup.last_offset,
                            dup.timestamp if append_time else -1,
                            self._log_start_offset,
                        )
                    raise CorruptRecordError("a duplicate idempotent batch inside a multi-batch request")
                self._producers.stage(header, pending, now)
            offset = self._local.next_offset
            buffers: list[bytes | memoryview] = []
            infos: list[BatchInfo] = []
            first = offset
            max_ts = -1
            total = record_count = 0
            txn_starts: list[tuple[int, int, int]] = []
            for pos, header in headers:
                base = offset
                if header.is_transactional:
                    txn_starts.append((header.producer_id, header.producer_epoch, base))
                if append_time:
                    head = bytearray(view[pos : pos + HEADER_SIZE])
                    _PREFIX.pack_into(head, 0, base, header.length, LEADER_EPOCH)
                    set_log_append_time(head, view[pos + HEADER_SIZE : pos + header.size], now)
                    buffers += (bytes(head), view[pos + HEADER_SIZE : pos + header.size])
                    batch_max_ts = now
                else:
                    buffers += (
                        _PREFIX.pack(base, header.length, LEADER_EPOCH),
                        view[pos + 16 : pos + header.size],
                    )
                    batch_max_ts = header.max_timestamp
                offset = base + header.last_offset_delta + 1
                infos.append(BatchInfo(header.size, offset - 1, batch_max_ts))
                if batch_max_ts > max_ts:
                    max_ts = batch_max_ts
                total += header.size
                record_count += header.count
            if pending:
                # producer state was staged from the client's headers; give it the stamped offsets
                self._restamp_pending(pending, headers, first)
            for pid, epoch, base in txn_starts:
                self._producers.begin_txn(pending, pid, epoch, base)
            self._maybe_roll(total, max_ts, offset - 1, now)
            self._local.append(buffers, infos)
            if pending:
                self._producers.commit(pending)
            self._unflushed_messages += record_count
            if self._unflushed_messages >= config.flush_messages:
                self._local.flush()
                self._unflushed_messages = 0
            return AppendInfo(first, offset - 1, now if append_time else -1, self._log_start_offset)

    def _restamp_pending(
        self, pending: dict[int, ProducerEntry], headers: list[tuple[int, BatchHeader]], first: int
    ) -> None:
        by_seq: dict[tuple[int, int], tuple[int, int]] = {}
        offset = first
        for _pos, h in headers:
            by_seq[(h.producer_id, h.base_sequence)] = (offset, offset + h.last_offset_delta)
            offset += h.last_offset_delta + 1
        for pid, entry in pending.items():
            fixed = []
            for b in entry.batches:
                if (pid, b.first_seq) in by_seq:
                    lo, hi = by_seq[(pid, b.first_seq)]
                    b = type(b)(b.first_seq, b.last_seq, lo, hi, b.timestamp)
                fixed.append(b)
            entry.batches.clear()
            entry.batches.extend(fixed)

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
            self._local.flush()
            self._unflushed_messages = 0

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
        completing its transaction here; an aborted one is recorded in the active segment's .txnindex,
        which read_committed fetches consult (Kafka's appendAsLeader with origin COORDINATOR)."""
        with self._lock:
            self._producers.check_marker(producer_id, producer_epoch)
            now = now_ms if now_ms is not None else self._local.clock()
            base = self._local.next_offset
            marker = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
            value = _CONTROL_VALUE.pack(0, coordinator_epoch)
            batch = encode_batch(
                [Record(base, now, marker, value)],
                base_offset=base,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partition_leader_epoch=LEADER_EPOCH,
                is_transactional=True,
                is_control=True,
            )
            self._maybe_roll(len(batch), now, base, now)
            self._local.append([batch], [BatchInfo(len(batch), base, now)])
            completed = self._producers.complete_txn(
                producer_id,
                producer_epoch,
                base,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                timestamp=now,
            )
            if completed.aborted:
                unstable = self._producers.first_unstable_offset()
                lso = base + 1 if unstable is None else min(unstable, base + 1)
                self._local.active.txn_index.append(
                    AbortedTxn(producer_id, completed.first_offset, completed.last_offset, lso)
                )
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

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None) -> ReadResult:
        """Whole batches from the one holding ``offset`` (the last slice may end inside a batch, as in
        Kafka). Out of range below the log start offset or above the high watermark; empty at it."""
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
                got = seg.read(offset, remaining, max_position=max_position, min_one_batch=not slices)
                if got is None:
                    if max_position is not None:
                        break  # the limit lies in this segment: nothing below it is left
                    continue  # a compaction gap at the end of this segment: go on to the next one
                pos, length = got
                slices.append(FetchSlice(seg.log_path, pos, length))
                remaining -= length
                end = seg.size if max_position is None else max_position
                if remaining <= 0 or pos + length < end or (max_position is not None):
                    break
                offset = seg.next_offset
            return ReadResult(slices, hw, start)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: ``(offset, timestamp)`` of the first record at or after ``timestamp``.

        -2 EARLIEST (the log start offset), -1 LATEST (the high watermark), -3 MAX_TIMESTAMP (KIP-734; the
        last offset of the batch holding the largest timestamp), -4 EARLIEST_LOCAL (= EARLIEST here).
        """
        with self._lock:
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return self._log_start_offset, -1
            if timestamp == LATEST_TIMESTAMP:
                return self.high_watermark, -1
            segs = list(self._local.segments.snapshot())
            if timestamp == MAX_TIMESTAMP:
                best = max(segs, key=lambda s: s.max_timestamp_so_far)
                if best.max_timestamp_so_far < 0:
                    return None
                return max(best.offset_of_max_timestamp, self._log_start_offset), best.max_timestamp_so_far
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

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (-1 = high watermark); returns the new
        low watermark. Idempotent; never backwards; refused on compact-only topics."""
        with self._lock:
            if not self.config.delete:
                raise PolicyViolationError(
                    f"records of {self.topic} cannot be deleted: cleanup.policy={self.config.cleanup_policy}"
                )
            if offset == -1:
                offset = self.high_watermark
            if offset < 0:
                raise OffsetOutOfRangeError(f"cannot delete records before negative offset {offset}")
            moved = self.maybe_increment_log_start_offset(
                offset, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION
            )
            low_watermark = self._log_start_offset
        if moved and self.on_log_start_offset_change is not None:
            self.on_log_start_offset_change(self)
        return low_watermark

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
            self._log_start_offset = new
            return True

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
                min_committed = committed.minimum(self.topic, self.partition) if committed else None
                if committed is None or not committed.known:
                    result.consumed_skipped = True
                elif min_committed is not None:
                    self._delete(
                        consumed_breach(
                            now, config.retention_commitoffset_ms, min_committed, self.log_end_offset
                        ),
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
            self._log_start_offset = survivor.base_offset
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
