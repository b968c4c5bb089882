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
   so the cleaned segment still ends where the group ended (the offset range a swap replaces).
4. The cleaned segment is swapped in (LocalLog.replace_segments: .cleaned -> .swap -> final name).

Batches whose records all survive and need no horizon are copied as raw bytes; only the others are
re-encoded (same base offset, codec, producer fields and timestamps). Keys are kept as bytes in a dict,
bounded by the same entry count as Kafka's MD5-keyed map.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ebb_broker.log import files
from ebb_broker.log.compression import Compression
from ebb_broker.log.local_log import SwapStage
from ebb_broker.log.log import Log
from ebb_broker.log.records import BatchHeader, decode_records, encode_batch
from ebb_broker.log.segment import INT_MAX, BatchInfo, Segment

log = logging.getLogger(__name__)

MAP_ENTRY_BYTES = 24  # Kafka's SkimpyOffsetMap: 16-byte MD5 + 8-byte offset
MAP_LOAD_FACTOR = 0.9


class OffsetMap:
    """Key -> newest offset in the dirty range, with Kafka's capacity for a given buffer size."""

    def __init__(self, buffer_bytes: int) -> None:
        self.capacity = max(1, int(buffer_bytes // MAP_ENTRY_BYTES * MAP_LOAD_FACTOR))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset

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
        segs = [s for s in lg.segments() if s.base_offset < end and s.next_offset > start]
        for i, seg in enumerate(segs):
            _, pos = seg.offset_index.lookup(start)
            full = False
            for _pos, header, raw in seg.iter_batches(pos):
                if header.base_offset >= end:
                    break
                if header.last_offset < start:
                    continue
                records = decode_records(raw, header)
                for r in records:
                    if r.key is not None and start <= r.offset < end:
                        if offset_map.full:
                            full = True
                            break
                        offset_map.put(r.key, r.offset)
                        stats.map_records += 1
                if full:
                    break
                offset_map.latest_offset = max(offset_map.latest_offset, min(header.last_offset, end - 1))
            if full:
                break
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else min(seg.next_offset, end)
            offset_map.latest_offset = max(offset_map.latest_offset, min(nxt, end) - 1)
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
        files.segment_file(lg.directory, base, files.LOG_SUFFIX, files.CLEANED).unlink(missing_ok=True)
        cleaned = lg.local.new_segment(base, temp=files.CLEANED)
        min_horizon: int | None = None
        last_source_batch = _last_batch(group)
        try:
            for seg in group:
                stats.bytes_read += seg.size
                for _pos, header, raw in seg.iter_batches():
                    is_last = last_source_batch is not None and header.base_offset == last_source_batch
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
        records = decode_records(raw, header)
        stats.records_read += len(records)
        horizon = header.delete_horizon_ms
        retain_deletes = horizon is None or now < horizon
        kept = []
        has_tombstone = False
        for r in records:
            if r.offset > offset_map.latest_offset:
                keep = True
            elif r.key is None:
                stats.invalid_records += 1
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
        )
        return out, (new_horizon if has_tombstone else None)


def _header_of(batch: bytes) -> BatchHeader:
    from ebb_broker.log.records import read_header

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
