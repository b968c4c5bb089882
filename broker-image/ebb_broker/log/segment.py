"""One log segment (Kafka's LogSegment): a .log of v2 batches plus its sparse .index and .timeindex.

The segment is named by its base offset. It appends whole batches (already stamped with offsets), adds
an offset-index and a time-index entry once more than ``index.interval.bytes`` were written since the last
entry (per batch, as Kafka 4.x), and answers reads by offset and by timestamp. Not thread-safe: the owning
``Log`` serialises every call under its lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log import files
from ebb_broker.log.errors import CorruptIndexError, CorruptRecordError
from ebb_broker.log.file_handles import LazyFile
from ebb_broker.log.offset_index import OffsetIndex
from ebb_broker.log.producer_state import CompletedTxn
from ebb_broker.log.records import crc32c, decode_records, read_end_txn_marker
from ebb_broker.log.time_index import TimeIndex
from ebb_broker.log.transaction_index import AbortedTxn, TransactionIndex
from ebb_formats.record_batch import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_TIMESTAMP,
    BatchHeader,
    read_header,
)

INT_MAX = 2**31 - 1
_READ_CHUNK = 8 * 1024 * 1024
_IOV_MAX = 1024


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the segment needs of each appended batch to maintain its indexes."""

    size: int
    last_offset: int
    max_timestamp: int


class Segment:
    """A .log file and its indexes; ``temp`` is '' for a live segment or .cleaned/.swap while swapping."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        created_ms: int,
        temp: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.temp = temp
        # Opened on demand through the process's bounded descriptor cache (file_handles).
        self._file = LazyFile(files.segment_file(directory, base_offset, files.LOG_SUFFIX, temp))
        with self._file as fd:
            self.size = os.fstat(fd).st_size
        self.created_ms = created_ms
        self._index_args = (max_index_size,)
        self.offset_index, self.time_index = self._open_indexes()
        self.txn_index, self.txn_index_torn = self._open_txn_index()
        self.next_offset = base_offset
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset - 1
        self.rolling_based_timestamp: int | None = None  # first batch's maxTimestamp (Kafka's roll clock)
        self.bytes_since_last_index_entry = 0

    def _open_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        try:
            oi = OffsetIndex(
                files.segment_file(self.directory, self.base_offset, files.INDEX_SUFFIX, self.temp),
                self.base_offset,
                *self._index_args,
            )
        except CorruptIndexError:
            oi = None
        try:
            ti = TimeIndex(
                files.segment_file(self.directory, self.base_offset, files.TIME_INDEX_SUFFIX, self.temp),
                self.base_offset,
                *self._index_args,
            )
        except CorruptIndexError:
            ti = None
        if oi is None or ti is None:
            # A torn index file: start both from scratch; load() rebuilds them from the .log.
            for suffix in (files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX):
                path = files.segment_file(self.directory, self.base_offset, suffix, self.temp)
                path.unlink(missing_ok=True)
            for index in (oi, ti):
                if index is not None:
                    index.close()
            oi = OffsetIndex(
                files.segment_file(self.directory, self.base_offset, files.INDEX_SUFFIX, self.temp),
                self.base_offset,
                *self._index_args,
            )
            ti = TimeIndex(
                files.segment_file(self.directory, self.base_offset, files.TIME_INDEX_SUFFIX, self.temp),
                self.base_offset,
                *self._index_args,
            )
            oi.reset()
            ti.reset()
        return oi, ti

    def _open_txn_index(self) -> tuple[TransactionIndex, bool]:
        path = files.segment_file(self.directory, self.base_offset, files.TXN_INDEX_SUFFIX, self.temp)
        try:
            return TransactionIndex(path), False
        except CorruptIndexError:
            path.unlink()  # rebuilt by load() from the segment's markers
            return TransactionIndex(path), True

    # -- loading and recovery ---------------------------------------------------------------------------

    def load(
        self,
        *,
        recover: bool,
        on_batch: Callable[[BatchHeader, int | None], CompletedTxn | None] | None = None,
    ) -> int:
        """Scan the .log: compute the next offset and max timestamp, feed ``on_batch`` (producer state)
        each batch header and, for a transaction marker, its control type (COMMIT/ABORT).

        With ``recover`` (no clean shutdown, Kafka's LogSegment.recover) every batch's CRC is checked and
        the indexes are rebuilt (the transaction index from the ABORT markers ``on_batch`` completes);
        otherwise only headers are read and an index is rebuilt only when it fails its sanity check.
        Either way the file is truncated at the first batch that is torn or corrupt. Returns the number of
        bytes truncated.
        """
        rebuild_txn = (recover or self.txn_index_torn) and on_batch is not None
        if rebuild_txn:
            self.txn_index.reset()
            self.txn_index_torn = False
        rebuild = recover
        if not rebuild:
            try:
                self.offset_index.sanity_check(self.size)
                self.time_index.sanity_check()
                last_off, _ = self.offset_index.last_entry()
                if self.offset_index.entries and last_off < self.base_offset:
                    raise CorruptIndexError("last offset below base")
            except CorruptIndexError:
                rebuild = True
        if rebuild:
            self.offset_index.reset()
            self.time_index.reset()
        pos, valid_end = 0, 0
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset - 1
        self.rolling_based_timestamp = None
        self.next_offset = self.base_offset
        while pos < self.size:
            header = self._valid_header_at(pos, check_crc=recover)
            if (
                header is None
                or header.base_offset < self.next_offset
                or (header.last_offset - self.base_offset > INT_MAX)
            ):
                break
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            if self.rolling_based_timestamp is None:
                self.rolling_based_timestamp = header.max_timestamp
            if rebuild:
                if self.bytes_since_last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(header.last_offset, pos)
                    self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
                    self.bytes_since_last_index_entry = 0
                self.bytes_since_last_index_entry += header.size
            if on_batch is not None:
                control = self._control_type_at(pos, header) if header.is_control else None
                completed = on_batch(header, control)
                if rebuild_txn and completed is not None and completed.aborted:
                    self.txn_index.append(
                        AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, -1)
                    )
            self.next_offset = header.next_offset
            pos += header.size
            valid_end = pos
        truncated = self.size - valid_end
        if truncated:
            with self._file as fd:
                os.ftruncate(fd, valid_end)
            self.size = valid_end
            self.offset_index.truncate_to(self.next_offset)
            self.time_index.truncate_to(self.next_offset)
            self.txn_index.truncate_to(self.next_offset)
        if not rebuild:
            _, last_pos = self.offset_index.last_entry()
            self.bytes_since_last_index_entry = (
                self.size - last_pos if self.offset_index.entries else self.size
            )
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp < 0:
            self.rolling_based_timestamp = None
        return truncated

    def _control_type_at(self, pos: int, header: BatchHeader) -> int | None:
        """The ControlRecordType (0 ABORT, 1 COMMIT) of the control batch at ``pos``."""
        with self._file as fd:
            raw = os.pread(fd, header.size, pos)
        marker = read_end_txn_marker(raw, header)
        return None if marker is None else marker[0]

    def _valid_header_at(self, pos: int, *, check_crc: bool) -> BatchHeader | None:
        with self._file as fd:
            raw = os.pread(fd, HEADER_SIZE, pos)
        if len(raw) < HEADER_SIZE:
            return None
        header = read_header(raw)
        if (
            header.magic != MAGIC
            or header.length < HEADER_SIZE - LOG_OVERHEAD
            or pos + header.size > self.size
        ):
            return None
        if header.last_offset_delta < 0:
            return None
        if check_crc:
            with self._file as fd:
                body = os.pread(fd, header.size - CRC_START, pos + CRC_START)
            if crc32c(body) != header.crc:
                return None
        return header

    # -- append -------------------------------------------------------------------------------------------

    def append(self, buffers: Sequence[bytes | memoryview], batches: Sequence[BatchInfo]) -> None:
        """Write stamped batches at the end of the .log and index them sparsely."""
        pos = self.size
        with self._file as fd:
            _pwritev_all(fd, buffers, pos)
        for b in batches:
            if b.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = b.max_timestamp
                self.offset_of_max_timestamp = b.last_offset
            if self.rolling_based_timestamp is None and b.max_timestamp >= 0:
                self.rolling_based_timestamp = b.max_timestamp
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(b.last_offset, pos)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += b.size
            pos += b.size
            self.next_offset = b.last_offset + 1
        self.size = pos

    def should_roll(
        self,
        *,
        incoming_bytes: int,
        max_timestamp: int,
        last_offset: int,
        segment_bytes: int,
        max_segment_ms: int,
        now_ms: int,
    ) -> bool:
        """Kafka's LogSegment.shouldRoll: size, time (on record timestamps), full index, offset overflow."""
        if self.size > segment_bytes - incoming_bytes:
            return True
        if self.size > 0:
            if self.rolling_based_timestamp is not None and max_timestamp >= 0:
                waited = max_timestamp - self.rolling_based_timestamp
            else:
                waited = now_ms - self.created_ms
            if waited > max_segment_ms:
                return True
        if self.offset_index.is_full() or self.time_index.is_full():
            return True
        return last_offset - self.base_offset > INT_MAX

    def on_become_inactive(self) -> None:
        """On roll: force the final time-index entry so the largest timestamp survives a restart."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)

    # -- reads ----------------------------------------------------------------------------------------------

    def read_header_at(self, pos: int) -> BatchHeader:
        with self._file as fd:
            return read_header(os.pread(fd, HEADER_SIZE, pos))

    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset`` (None past the end)."""
        _, pos = self.offset_index.lookup(offset)
        pos = max(pos, start_position)
        while pos + HEADER_SIZE <= self.size:
            header = self.read_header_at(pos)
            if header.last_offset >= offset:
                return pos, header
            pos += header.size
        return None

    def read(
        self, offset: int, max_size: int, *, max_position: int | None = None, min_one_batch: bool = True
    ) -> tuple[int, int] | None:
        """``(position, length)`` of bytes starting at the batch holding ``offset`` (Kafka's read: the
        slice may end inside a batch, clients drop the partial tail; KIP-74: at least one whole batch)."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        pos, header = found
        end = self.size if max_position is None else min(max_position, self.size)
        length = min(max_size, end - pos)
        if min_one_batch:
            length = max(length, min(header.size, end - pos))
        return (pos, length) if length > 0 else None

    def iter_batches(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader, bytes]]:
        """Yield ``(position, header, whole batch bytes)`` from ``start``, reading the file in chunks."""
        end = self.size if end is None else end
        pos = start
        while pos < end:
            with self._file as fd:
                chunk = os.pread(fd, min(_READ_CHUNK, end - pos), pos)
            view = memoryview(chunk)
            i = 0
            while i + HEADER_SIZE <= len(chunk):
                header = read_header(view, i)
                if i + header.size > len(chunk):
                    break
                yield pos + i, header, chunk[i : i + header.size]
                i += header.size
            if i == 0:  # a batch larger than the chunk
                header = self.read_header_at(pos)
                if header.size <= 0 or pos + header.size > end:
                    raise CorruptRecordError(f"{self.log_path}: torn batch at byte {pos}")
                with self._file as fd:
                    whole = os.pread(fd, header.size, pos)
                yield pos, header, whole
                i = header.size
            pos += i

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """First record with timestamp >= ``timestamp`` and offset >= ``start_offset``: (offset, timestamp).

        Kafka's LogSegment.findOffsetByTimestamp: time index -> offset index -> scan batches -> decode the
        one batch that holds the answer.
        """
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(ts_offset, start_offset))
        for _pos, header, raw in self.iter_batches(pos):
            if header.max_timestamp < timestamp or header.last_offset < start_offset:
                continue
            for record in decode_records(raw, header):
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    return record.offset, record.timestamp
        return None

    def max_timestamp_record(self) -> tuple[int, int] | None:
        """KIP-734's MAX_TIMESTAMP within this segment: ``(offset, timestamp)`` of the first record carrying
        the segment's largest timestamp, or None when it has no timestamps.

        As Kafka 4's UnifiedLog: the segment tracks the last offset of the batch that raised its maximum
        (``offset_of_max_timestamp``, rebuilt from the batch headers at load, so it survives a restart);
        the first batch from there whose maxTimestamp is the maximum is decoded to find the record (the
        validator made every stored batch's maxTimestamp its largest record timestamp).
        """
        if self.max_timestamp_so_far < 0:
            return None
        found = self.translate_offset(self.offset_of_max_timestamp)
        if found is None:
            return None
        for _pos, header, raw in self.iter_batches(found[0]):
            if header.max_timestamp == self.max_timestamp_so_far:
                for record in decode_records(raw, header):
                    if record.timestamp == self.max_timestamp_so_far:
                        return record.offset, record.timestamp
                return header.last_offset, header.max_timestamp  # a batch whose records are all gone
        return None

    @property
    def largest_timestamp(self) -> int:
        """Max record timestamp, or the file's mtime when the segment has none (Kafka)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        with self._file as fd:
            return int(os.fstat(fd).st_mtime * 1000)

    def set_last_modified(self, ms: int) -> None:
        os.utime(self.log_path, ns=(ms * 1_000_000, ms * 1_000_000))

    # -- files ----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        with self._file as fd:
            os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def change_temp_suffix(self, temp: str) -> None:
        """Rename every file of the segment to carry ``temp`` ('' = live name)."""
        self._file.rename(files.segment_file(self.directory, self.base_offset, files.LOG_SUFFIX, temp))
        self.offset_index.rename_to(
            files.segment_file(self.directory, self.base_offset, files.INDEX_SUFFIX, temp)
        )
        self.time_index.rename_to(
            files.segment_file(self.directory, self.base_offset, files.TIME_INDEX_SUFFIX, temp)
        )
        self.txn_index.rename_to(
            files.segment_file(self.directory, self.base_offset, files.TXN_INDEX_SUFFIX, temp)
        )
        self.temp = temp

    def close(self) -> None:
        self._file.close()
        self.offset_index.close()
        self.time_index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            path.unlink(missing_ok=True)
        self.txn_index.delete()

    def paths(self) -> list[Path]:
        txn = [self.txn_index.path] if self.txn_index.path.exists() else []
        return [self.log_path, self.offset_index.path, self.time_index.path, *txn]

    @property
    def log_path(self) -> Path:
        return self._file.path

    @property
    def file(self) -> LazyFile:
        """The .log file's descriptor in the process's cache (fetch responses hold it while sending)."""
        return self._file

    def __repr__(self) -> str:
        return f"Segment({self.base_offset}, size={self.size}, next={self.next_offset}{self.temp})"


def _pwritev_all(fd: int, buffers: Sequence[bytes | memoryview], pos: int) -> None:
    """Write every buffer at ``pos``; pwritev may stop early (signals, huge writes), so loop."""
    for i in range(0, len(buffers), _IOV_MAX):
        group = buffers[i : i + _IOV_MAX]
        want = sum(map(len, group))
        written = os.pwritev(fd, group, pos)
        if written < want:
            data = b"".join(bytes(b) for b in group)[written:]
            while data:
                n = os.pwrite(fd, data, pos + written)
                data, written = data[n:], written + n
        pos += want
