"""Which log the cleaner works on next, and how far each is clean (Kafka's LogCleanerManager).

Per compacted partition it keeps the first dirty offset (persisted in ``cleaner-offset-checkpoint``,
Kafka's text format, rewritten after every cleaning) and the earliest tombstone delete horizon left in
the clean section. A log is eligible when its dirty ratio ``cleanable / (clean + cleanable)`` exceeds
``min.cleanable.dirty.ratio``, when ``max.compaction.lag.ms`` forces it (KIP-354: a dirty segment whose
first batch is older than the lag), or when a tombstone horizon has passed (Ebb closes KAFKA-8522: an idle
partition would otherwise keep its expired tombstones forever). The highest ratio wins.

The cleanable range is ``[first dirty, first uncleanable)``: the first dirty offset is the checkpoint
(reset to the log start offset when it lies outside [log start, log end]); the first uncleanable offset
is the smallest of the high watermark, the active segment's base and (KIP-58) the base of the first
segment holding a record younger than ``min.compaction.lag.ms``.

Partitions whose cleaning failed (a corrupt segment) are marked uncleanable until restart and logged.
Not thread-safe on its own: the LogManager runs it under its maintenance lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log import files
from ebb_broker.log.checkpoint import read_offsets, write_offsets
from ebb_broker.log.cleaner import Cleaner, CleanerStats
from ebb_broker.log.errors import LogError
from ebb_broker.log.local_log import SwapStage
from ebb_broker.log.log import Log

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CleanableOffsets:
    first_dirty: int
    first_uncleanable: int
    needs_compaction_now: bool  # KIP-354
    checkpoint_reset: bool


@dataclass(frozen=True)
class LogToClean:
    log: Log
    offsets: CleanableOffsets
    clean_bytes: int
    cleanable_bytes: int
    horizon_expired: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(frozen=True)
class CleanerReport:
    topic: str
    partition: int
    first_dirty: int
    end_offset: int
    ratio: float
    reason: str  # "dirty-ratio", "max-compaction-lag" or "tombstone-horizon"
    stats: CleanerStats


def cleanable_offsets(lg: Log, checkpoint: int | None, now: int) -> CleanableOffsets:
    """Kafka's LogCleanerManager.cleanableOffsets, on a single node (HW = LEO): never past the last
    stable offset, so records of a transaction still open are not judged before its marker."""
    start, end = lg.log_start_offset, lg.log_end_offset
    reset = checkpoint is None or checkpoint < start or checkpoint > end
    first_dirty = start if reset else checkpoint
    assert first_dirty is not None
    segs = lg.segments()
    active = segs[-1]
    config = lg.config
    dirty_non_active = [s for s in segs[:-1] if s.next_offset > first_dirty or s.base_offset >= first_dirty]
    candidates = [lg.last_stable_offset, active.base_offset]
    if config.min_compaction_lag_ms > 0:
        for s in dirty_non_active:
            if s.largest_timestamp > now - config.min_compaction_lag_ms:
                candidates.append(s.base_offset)
                break
    first_uncleanable = max(first_dirty, min(candidates))
    needs_now = False
    if config.max_compaction_lag_ms < 2**63 - 1:
        for s in dirty_non_active:
            if s.size == 0:
                continue
            first_ts = s.read_header_at(0).max_timestamp
            if 0 <= first_ts < now - config.max_compaction_lag_ms:
                needs_now = True
                break
    return CleanableOffsets(first_dirty, first_uncleanable, needs_now, reset and checkpoint is not None)


class CleanerManager:
    """Cleaner checkpoints and the choice of the filthiest compacted log.

    It is handed what it needs (the data directory for its checkpoint, the current logs, the clock),
    not the LogManager that owns it.
    """

    def __init__(
        self,
        data_dir: Path,
        logs: Callable[[], list[Log]],
        clock: Callable[[], int],
        *,
        dedupe_buffer_size: int,
    ) -> None:
        self.data_dir = data_dir
        self.logs = logs
        self.clock = clock
        self.dedupe_buffer_size = dedupe_buffer_size
        self.checkpoints: dict[TopicPartition, int] = {}
        self.horizons: dict[TopicPartition, int | None] = {}
        self.uncleanable: set[TopicPartition] = set()
        self.after_swap_stage: Callable[[SwapStage], None] | None = None

    @property
    def path(self) -> Path:
        return self.data_dir / files.CLEANER_OFFSET_CHECKPOINT

    def load(self) -> None:
        self.checkpoints = read_offsets(self.path)

    def write_checkpoint(self) -> None:
        live = {(lg.topic, lg.partition) for lg in self.logs()}
        write_offsets(self.path, {tp: o for tp, o in self.checkpoints.items() if tp in live})

    def forget(self, topic: str) -> None:
        for d in (self.checkpoints, self.horizons):
            for tp in [tp for tp in d if tp[0] == topic]:
                del d[tp]
        self.uncleanable = {tp for tp in self.uncleanable if tp[0] != topic}
        self.write_checkpoint()

    def _min_horizon(self, lg: Log, first_dirty: int) -> int | None:
        """Earliest delete horizon of the clean section, from batch headers (cached per cleaning)."""
        tp = (lg.topic, lg.partition)
        if tp not in self.horizons:
            best: int | None = None
            for seg in lg.segments():
                if seg.base_offset >= first_dirty:
                    break
                for _pos, header, _raw in seg.iter_batches():
                    h = header.delete_horizon_ms
                    if h is not None and (best is None or h < best):
                        best = h
            self.horizons[tp] = best
        return self.horizons[tp]

    def log_to_clean(self, lg: Log, now: int) -> LogToClean:
        tp = (lg.topic, lg.partition)
        offsets = cleanable_offsets(lg, self.checkpoints.get(tp), now)
        if offsets.checkpoint_reset:
            log.info("cleaner checkpoint of %s-%s was outside the log; reset to %d", *tp, offsets.first_dirty)
            self.checkpoints[tp] = offsets.first_dirty
            self.horizons.pop(tp, None)
            self.write_checkpoint()
        first_seg = lg.local.segments.floor(offsets.first_dirty)
        dirty_lo = first_seg.base_offset if first_seg is not None else offsets.first_dirty
        clean = sum(s.size for s in lg.segments() if s.base_offset < dirty_lo)
        cleanable = sum(
            s.size for s in lg.segments() if dirty_lo <= s.base_offset < offsets.first_uncleanable
        )
        horizon = self._min_horizon(lg, offsets.first_dirty)
        return LogToClean(lg, offsets, clean, cleanable, horizon is not None and horizon <= now)

    def grab_filthiest(self, now: int) -> tuple[LogToClean, str] | None:
        best: tuple[LogToClean, str] | None = None
        for lg in self.logs():
            if not lg.config.compact or (lg.topic, lg.partition) in self.uncleanable:
                continue
            ltc = self.log_to_clean(lg, now)
            if ltc.total_bytes == 0:
                continue
            if ltc.cleanable_ratio > lg.config.min_cleanable_dirty_ratio and ltc.cleanable_bytes > 0:
                reason = "dirty-ratio"
            elif ltc.offsets.needs_compaction_now and ltc.cleanable_bytes > 0:
                reason = "max-compaction-lag"
            elif ltc.horizon_expired:
                reason = "tombstone-horizon"
            else:
                continue
            if best is None or ltc.cleanable_ratio > best[0].cleanable_ratio:
                best = (ltc, reason)
        return best

    def clean_filthiest(self) -> CleanerReport | None:
        now = self.clock()
        chosen = self.grab_filthiest(now)
        if chosen is None:
            return None
        ltc, reason = chosen
        lg = ltc.log
        tp = (lg.topic, lg.partition)
        cleaner = Cleaner(self.dedupe_buffer_size, self.clock, self.after_swap_stage)
        try:
            result = cleaner.clean(lg, ltc.offsets.first_dirty, ltc.offsets.first_uncleanable)
        except LogError as exc:
            log.error("marking %s-%s uncleanable: %s", *tp, exc)
            self.uncleanable.add(tp)
            return None
        self.checkpoints[tp] = result.end_offset
        self.horizons[tp] = result.min_delete_horizon_ms
        self.write_checkpoint()
        s = result.stats
        log.info(
            "cleaned %s-%s [%d, %d) (%s): %d -> %d bytes, %d -> %d records in %.3fs",
            *tp,
            result.first_dirty,
            result.end_offset,
            reason,
            s.bytes_read,
            s.bytes_written,
            s.records_read,
            s.records_retained,
            s.elapsed_s,
        )
        return CleanerReport(
            lg.topic, lg.partition, result.first_dirty, result.end_offset, ltc.cleanable_ratio, reason, s
        )
