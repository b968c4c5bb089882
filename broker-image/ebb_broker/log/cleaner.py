"""The log cleaner's algorithm (Kafka's Cleaner): build a key -> latest offset map, recopy segments.

One cleaning of a log with dirty range ``[first_dirty, first_uncleanable)``:

1. Offset map: every keyed record of the dirty range, newest offset per key, until the map is full
   (``log.cleaner.dedupe.buffer.size`` / 24 bytes per entry * 0.9, Kafka's sizing). ``end_offset`` is
   one past the last mapped batch (or the next segment's base after a whole segment, which covers gaps);
   it becomes the new cleaner checkpoint.
2. Groups: the segments below ``end_offset`` (the clean prefix too, so tombstones there expire) are
   grouped so that each group fits in one segment (segment.bytes, segment.index.bytes, int32 offsets).
3. Each group is recopied into ``<base>.log.cleaned``: a record survives if it lies beyond the map, or
   its offset is at least the map's offset for its key and it is not an expired tombstone. A tombstone
   (null value when tombstone.null.value.enable, or KIP-87's explicit marker: record attribute bit 0x01
   or header ``ebb.tombstone``, which keeps its payload) survives the cleaning that first sees it: its
   batch gets a delete horizon (KIP-534: baseTimestamp = now + delete.retention.ms, attribute bit 0x40)
   and a later cleaning after the horizon drops it. The last batch of a group is kept, empty if need be,
   so the cleaned segment still ends where the group ended (the offset range a swap replaces); so is
   each idempotent producer's newest batch, so its sequence survives (Kafka's RETAIN_EMPTY).
4. The cleaned segment is swapped in (LocalLog.replace_segments: .cleaned -> .swap -> final name),
   with the aborted transactions of the segments it replaces in its .txnindex.

Transactions (KIP-98): control batches (markers) are kept and never mapped; the records of aborted
transactions are neither mapped nor kept (each producer's newest batch stays, empty), so a committed value
is never superseded by an aborted one. The dirty range ends at the last stable offset.

Batches whose records all survive and need no horizon are copied as raw bytes; only the others are
re-encoded (same base offset, codec, producer fields and timestamps). Keys are kept as bytes in a dict,
bounded by the same entry count as Kafka's MD5-keyed map.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ebb_broker.log import files
from ebb_broker.log.compression import Compression
from ebb_broker.log.local_log import SwapStage
from ebb_broker.log.log import Log
from ebb_broker.log.records import decode_records, encode_batch, scan_keys, splice_batch
from ebb_broker.log.segment import INT_MAX, BatchInfo, Segment
from ebb_formats.record_batch import BatchHeader

log = logging.getLogger(__name__)

MAP_ENTRY_BYTES = 24  # Kafka's SkimpyOffsetMap: 16-byte MD5 + 8-byte offset
MAP_LOAD_FACTOR = 0.9


class OffsetMap:
    """Key -> newest offset in the dirty range, with Kafka's capacity for a given buffer size."""

    def __init__(self, buffer_bytes: int) -> None:
        self.capacity = max(1, int(buffer_bytes // MAP_ENTRY_BYTES * MAP_LOAD_FACTOR))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1
        self.start = 0  # first mapped offset (the first dirty offset)
        self.tombstones: set[int] = set()  # mapped offsets whose record is a tombstone
        self.sorted_latest: list[int] = []  # the map's offsets, sorted: survivors of the mapped range
        # base offset -> (record offsets, record starts) of mapped batches, so the recopy can splice a
        # partly retained batch without walking its records again; bounded to the map's capacity
        self.scanned: dict[int, tuple[list[int], list[int]]] = {}
        self._scanned_records = 0

    def remember(self, base_offset: int, offsets: list[int], starts: list[int]) -> None:
        if self._scanned_records + len(offsets) <= self.capacity:
            self.scanned[base_offset] = (offsets, starts)
            self._scanned_records += len(offsets)

    def seal(self) -> None:
        """After the map pass: index the surviving offsets so whole batches are judged by bisection."""
        self.sorted_latest = sorted(self._map.values())
        latest = set(self.sorted_latest)
        self.tombstones &= latest

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset

    def update(self, keys: list[bytes | None], offsets: list[int]) -> None:
        """Map a whole batch (keys non-null, offsets increasing, so later offsets win)."""
        self._map.update(zip(keys, offsets, strict=True))  # type: ignore[arg-type]

    def get(self, key: bytes) -> int:
        return self._map.get(key, -1)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.capacity

    def __len__(self) -> int:
        return len(self._map)


@dataclass
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    invalid_records: int = 0  # records without key in the cleaned range (dropped)
    map_records: int = 0
    started: float = field(default_factory=time.perf_counter)
    elapsed_s: float = 0.0


@dataclass
class CleanResult:
    first_dirty: int
    end_offset: int  # the new cleaner checkpoint
    stats: CleanerStats
    min_delete_horizon_ms: int | None  # earliest tombstone horizon left in the log (KAFKA-8522 trigger)


class Cleaner:
    """Cleans one log at a time; ``after_stage`` is handed to every swap (tests stop swaps with it)."""

    def __init__(
        self,
        dedupe_buffer_bytes: int,
        clock: Callable[[], int],
        after_stage: Callable[[SwapStage], None] | None = None,
    ) -> None:
        self.dedupe_buffer_bytes = dedupe_buffer_bytes
        self.clock = clock
        self.after_stage = after_stage

    def build_offset_map(
        self, lg: Log, start: int, end: int, offset_map: OffsetMap, stats: CleanerStats
    ) -> int:
        """Map keys of [start, end); returns the next dirty offset (``latest_offset + 1``)."""
        offset_map.latest_offset = start - 1
        offset_map.start = start
        null_is_tombstone = lg.config.tombstone_null_value_enable
        segs = [s for s in lg.segments() if s.base_offset < end and s.next_offset > start]
        aborted = _AbortedBatches(lg, start, end)
        for i, seg in enumerate(segs):
            _, pos = seg.offset_index.lookup(start)
            full = False
            for _pos, header, raw in seg.iter_batches(pos):
                if header.base_offset >= end:
                    break
                if header.last_offset < start:
                    continue
                if header.is_control or aborted.contains(header):
                    offset_map.latest_offset = max(offset_map.latest_offset, min(header.last_offset, end - 1))
                    continue
                starts: list[int] = []
                offsets, keys, tombs = scan_keys(raw, header, null_is_tombstone, starts)
                if (
                    offsets
                    and offsets[0] >= start
                    and offsets[-1] < end
                    and None not in keys
                    and len(offset_map) + len(keys) <= offset_map.capacity
                ):
                    offset_map.update(keys, offsets)  # the whole batch fits: one C-level update
                    offset_map.tombstones.update(tombs)
                    offset_map.remember(header.base_offset, offsets, starts)
                    stats.map_records += len(keys)
                else:
                    tomb_set = set(tombs)
                    for offset, key in zip(offsets, keys, strict=True):
                        if key is None and start <= offset < end:
                            stats.invalid_records += 1  # dropped by the recopy; counted once, here
                        elif key is not None and start <= offset < end:
                            if offset_map.full:
                                full = True
                                break
                            offset_map.put(key, offset)
                            if offset in tomb_set:
                                offset_map.tombstones.add(offset)
                            stats.map_records += 1
                if full:
                    break
                offset_map.latest_offset = max(offset_map.latest_offset, min(header.last_offset, end - 1))
            if full:
                break
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else min(seg.next_offset, end)
            offset_map.latest_offset = max(offset_map.latest_offset, min(nxt, end) - 1)
        offset_map.seal()
        return offset_map.latest_offset + 1

    def clean(self, lg: Log, first_dirty: int, first_uncleanable: int) -> CleanResult:
        stats = CleanerStats()
        now = self.clock()
        config = lg.config
        offset_map = OffsetMap(self.dedupe_buffer_bytes)
        end_offset = self.build_offset_map(lg, first_dirty, first_uncleanable, offset_map, stats)
        segs = [s for s in lg.segments() if s.base_offset < end_offset]
        active = lg.local.active
        segs = [s for s in segs if s is not active]
        min_horizon: int | None = None
        for group in group_segments_by_size(segs, config.segment_bytes, config.segment_index_bytes):
            horizon = self._clean_group(lg, group, offset_map, now, stats)
            if horizon is not None:
                min_horizon = horizon if min_horizon is None else min(min_horizon, horizon)
        stats.elapsed_s = time.perf_counter() - stats.started
        return CleanResult(first_dirty, end_offset, stats, min_horizon)

    def _clean_group(
        self, lg: Log, group: Sequence[Segment], offset_map: OffsetMap, now: int, stats: CleanerStats
    ) -> int | None:
        config = lg.config
        null_is_tombstone = config.tombstone_null_value_enable
        horizon_new = now + config.delete_retention_ms
        base = group[0].base_offset
        for suffix in (files.LOG_SUFFIX, files.TXN_INDEX_SUFFIX):
            files.segment_file(lg.directory, base, suffix, files.CLEANED).unlink(missing_ok=True)
        cleaned = lg.local.new_segment(base, temp=files.CLEANED)
        min_horizon: int | None = None
        last_source_batch = _last_batch(group)
        producer_last = lg.producer_last_offsets()
        aborted = _AbortedBatches(lg, base, group[-1].next_offset)
        try:
            for seg in group:
                stats.bytes_read += seg.size
                for txn in seg.txn_index.entries:
                    cleaned.txn_index.append(txn)
                for _pos, header, raw in seg.iter_batches():
                    is_last = (last_source_batch is not None and header.base_offset == last_source_batch) or (
                        header.producer_id >= 0 and header.last_offset in producer_last
                    )
                    if aborted.contains(header):
                        out, horizon = _emptied(header, raw, is_last, stats)
                    else:
                        out, horizon = self._filter_batch(
                            header, raw, offset_map, now, horizon_new, null_is_tombstone, is_last, stats
                        )
                    if out is None:
                        continue
                    if horizon is not None:
                        min_horizon = horizon if min_horizon is None else min(min_horizon, horizon)
                    out_header = header if out is raw else _header_of(out)
                    cleaned.append(
                        [out], [BatchInfo(len(out), out_header.last_offset, out_header.max_timestamp)]
                    )
                    stats.bytes_written += len(out)
            cleaned.on_become_inactive()
            cleaned.flush()
            cleaned.set_last_modified(group[-1].last_modified_ms)
            with lg.lock:
                current = {s.base_offset for s in lg.local.segments}
                if any(s.base_offset not in current for s in group):
                    raise RuntimeError("segments changed while cleaning")
                lg.local.replace_segments(cleaned, group, after_stage=self.after_stage)
        except Exception:  # a failed cleaning leaves no output; a crash (BaseException) leaves it to recovery
            if cleaned.temp == files.CLEANED:
                cleaned.delete()
            raise
        return min_horizon

    def _filter_batch(
        self,
        header: BatchHeader,
        raw: bytes,
        offset_map: OffsetMap,
        now: int,
        horizon_new: int,
        null_is_tombstone: bool,
        is_last: bool,
        stats: CleanerStats,
    ) -> tuple[bytes | None, int | None]:
        """The batch to write (the raw bytes when nothing changes) and its delete horizon, if it has one."""
        if header.is_control:
            return raw, None
        om = offset_map
        horizon = header.delete_horizon_ms
        if om.start <= header.base_offset and header.last_offset <= om.latest_offset:
            # Every record of this batch was mapped, so its survivors are exactly the map's offsets inside
            # it: whole batches are kept or dropped by bisection, without decoding a record.
            lo = bisect_left(om.sorted_latest, header.base_offset)
            hi = bisect_right(om.sorted_latest, header.last_offset)
            n = hi - lo
            tombs = om.tombstones and any(o in om.tombstones for o in om.sorted_latest[lo:hi])
            if n == 0 and not is_last:
                stats.records_read += header.count
                return None, None
            if not tombs or (horizon is not None and now < horizon):
                stats.records_read += header.count
                stats.records_retained += n
                if n == header.count:
                    return raw, horizon if tombs else None
                # partly retained: copy the surviving records' bytes, no decode/re-encode
                kept_offsets = set(om.sorted_latest[lo:hi])
                out = splice_batch(
                    raw,
                    header,
                    kept_offsets,
                    keep_last_offset_delta=is_last or n == 0,
                    scanned=om.scanned.get(header.base_offset),
                )
                return out, horizon if tombs else None
        records = decode_records(raw, header)
        stats.records_read += len(records)
        retain_deletes = horizon is None or now < horizon
        kept = []
        has_tombstone = False
        for r in records:
            if r.offset > offset_map.latest_offset:
                keep = True
            elif r.key is None:
                if r.offset < om.start:
                    stats.invalid_records += 1  # (keyless records of the mapped range were counted there)
                keep = False
            else:
                tomb = r.is_tombstone(null_is_tombstone)
                keep = r.offset >= offset_map.get(r.key) and (not tomb or retain_deletes)
            if keep:
                kept.append(r)
                if r.is_tombstone(null_is_tombstone):
                    has_tombstone = True
        stats.records_retained += len(kept)
        needs_horizon = has_tombstone and horizon is None
        if len(kept) == len(records) and not needs_horizon:
            return raw, horizon if has_tombstone else None
        if not kept and not is_last:
            return None, None
        new_horizon = horizon_new if needs_horizon else horizon
        base_ts = (
            new_horizon if new_horizon is not None else (kept[0].timestamp if kept else header.base_timestamp)
        )
        out = encode_batch(
            kept,
            base_offset=header.base_offset,
            base_timestamp=base_ts,
            max_timestamp=header.max_timestamp,
            last_offset_delta=header.last_offset_delta if (is_last or not kept) else None,
            compression=Compression(header.compression),
            timestamp_type=header.timestamp_type,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            partition_leader_epoch=header.partition_leader_epoch,
            delete_horizon=new_horizon is not None,
            is_transactional=header.is_transactional,
        )
        return out, (new_horizon if has_tombstone else None)


class _AbortedBatches:
    """Which transactional batches of [start, end) belong to an aborted transaction (from the .txnindex)."""

    def __init__(self, lg: Log, start: int, end: int) -> None:
        self._by_producer: dict[int, list[tuple[int, int]]] = {}
        for txn in lg.collect_aborted_transactions(start, end):
            self._by_producer.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))

    def contains(self, header: BatchHeader) -> bool:
        if not header.is_transactional or header.is_control or not self._by_producer:
            return False
        ranges = self._by_producer.get(header.producer_id, ())
        return any(first <= header.base_offset <= last for first, last in ranges)


def _emptied(
    header: BatchHeader, raw: bytes, keep_empty: bool, stats: CleanerStats
) -> tuple[bytes | None, None]:
    """An aborted transaction's batch: dropped, or kept without records when it must stay (the group's
    last batch, or its producer's newest, whose sequence must survive)."""
    stats.records_read += header.count
    if not keep_empty:
        return None, None
    out = encode_batch(
        [],
        base_offset=header.base_offset,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        last_offset_delta=header.last_offset_delta,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        is_transactional=True,
    )
    return out, None


def _header_of(batch: bytes) -> BatchHeader:
    from ebb_formats.record_batch import read_header

    return read_header(batch)


def _last_batch(group: Sequence[Segment]) -> int | None:
    """Base offset of the group's last batch (kept, maybe empty, so the group's offset range survives)."""
    for seg in reversed(group):
        if seg.size == 0:
            continue
        last = None
        for _pos, header, _raw in seg.iter_batches(seg.offset_index.last_entry()[1]):
            last = header.base_offset
        return last
    return None


def group_segments_by_size(
    segments: Sequence[Segment], max_size: int, max_index_size: int
) -> list[list[Segment]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose total log and index sizes fit one segment
    and whose offsets fit int32 relative offsets."""
    groups: list[list[Segment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        log_size = group[0].size
        index_size = group[0].offset_index.size_in_bytes()
        time_size = group[0].time_index.size_in_bytes()
        while rest:
            nxt = rest[0]
            if (
                log_size + nxt.size > max_size
                or index_size + nxt.offset_index.size_in_bytes() > max_index_size
                or time_size + nxt.time_index.size_in_bytes() > max_index_size
                or max(nxt.next_offset - 1, nxt.base_offset) - group[0].base_offset > INT_MAX
            ):
                break
            group.append(rest.pop(0))
            log_size += nxt.size
            index_size += nxt.offset_index.size_in_bytes()
            time_size += nxt.time_index.size_in_bytes()
        groups.append(group)
    return groups
