"""Recovery at startup (Kafka's LogLoader): finish or undo swaps, rebuild indexes, truncate torn tails.

1. Temporary files: ``*.deleted`` are removed; ``*.cleaned`` are removed together with any ``*.swap`` at or
   above the smallest cleaned offset (an interrupted swap that had not fully reached ``.swap``); every other
   ``.swap`` completes its swap: ordinary segments whose base offset lies in the swap's offset range are
   deleted and the swap is renamed to its final name.
2. Orphan index files (no ``.log``) are deleted; segments load in offset order. A missing or insane index
   is rebuilt from the ``.log``.
3. Without the clean-shutdown marker, every segment from the recovery point onwards is recovered: each
   batch's framing and CRC-32C is checked, indexes are rebuilt, and the file is truncated at the first torn
   or corrupt batch (later segments are then deleted, as Kafka does).
4. The log start offset is ``max(checkpoint, first segment base)``; a log end below the checkpointed log
   start offset means everything is gone: the log restarts empty at that offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log import files
from ebb_broker.log.checkpoint import fsync_dir
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.producer_state import ProducerStateManager
from ebb_broker.log.segment import Segment
from ebb_broker.log.segments import Segments

log = logging.getLogger(__name__)


@dataclass
class LoadedLog:
    segments: Segments
    next_offset: int
    recovery_point: int
    log_start_offset: int
    producer_state: ProducerStateManager
    truncated_bytes: int


def _open(directory: Path, base: int, config: LogConfig, now: int, temp: str = "") -> Segment:
    return Segment(
        directory,
        base,
        index_interval_bytes=config.index_interval_bytes,
        max_index_size=config.segment_index_bytes,
        created_ms=now,
        temp=temp,
    )


def _delete_segment_files(directory: Path, base: int, temp: str = "") -> None:
    for suffix in files.SEGMENT_SUFFIXES:
        files.segment_file(directory, base, suffix, temp).unlink(missing_ok=True)


def _complete_swaps(directory: Path, config: LogConfig, now: int) -> None:
    names = [(p, files.parse_segment_file(p)) for p in directory.iterdir()]
    parsed = [(p, info) for p, info in names if info is not None]
    for p, (_base, _suffix, temp) in parsed:
        if temp == files.DELETED:
            p.unlink(missing_ok=True)
    cleaned = [base for _p, (base, _s, temp) in parsed if temp == files.CLEANED]
    min_cleaned = min(cleaned, default=None)
    swaps = sorted(
        {base for _p, (base, suffix, temp) in parsed if temp == files.SWAP and suffix == files.LOG_SUFFIX}
    )
    for p, (base, _suffix, temp) in parsed:
        if temp == files.CLEANED or (temp == files.SWAP and min_cleaned is not None and base >= min_cleaned):
            p.unlink(missing_ok=True)
    # index-only .swap files without their .log cannot be completed
    for p, (base, _suffix, temp) in parsed:
        if temp == files.SWAP and base not in swaps and p.exists():
            p.unlink(missing_ok=True)
    live = sorted({base for _p, (base, suffix, temp) in parsed if temp == "" and suffix == files.LOG_SUFFIX})
    for base in swaps:
        if min_cleaned is not None and base >= min_cleaned:
            continue
        if not files.segment_file(directory, base, files.LOG_SUFFIX, files.SWAP).exists():
            continue
        swap = _open(directory, base, config, now, files.SWAP)
        swap.load(recover=True)
        end = swap.next_offset
        for old in live:
            if base <= old < max(end, base + 1):
                _delete_segment_files(directory, old)
        swap.change_temp_suffix("")
        swap.close()
        log.info("completed interrupted swap of segment %s in %s", base, directory)
    fsync_dir(directory)


def load_log(
    directory: Path,
    config: LogConfig,
    *,
    recovery_point: int,
    log_start_offset: int,
    clean_shutdown: bool,
    clock: Callable[[], int],
) -> LoadedLog:
    """Open every segment of ``directory``, recovering as needed (see the module docstring)."""
    now = clock()
    directory.mkdir(parents=True, exist_ok=True)
    _complete_swaps(directory, config, now)
    bases: set[int] = set()
    for p in list(directory.iterdir()):
        info = files.parse_segment_file(p)
        if info is None:
            continue
        base, suffix, temp = info
        if temp:
            continue
        if suffix == files.LOG_SUFFIX:
            bases.add(base)
    for p in list(directory.iterdir()):
        info = files.parse_segment_file(p)
        if info is not None and not info[2] and info[1] != files.LOG_SUFFIX and info[0] not in bases:
            p.unlink()  # orphan index
    segments = Segments()
    producers = ProducerStateManager()
    truncated_total = 0
    truncated_at: int | None = None
    for base in sorted(bases):
        seg = _open(directory, base, config, now)
        if truncated_at is not None:
            log.warning("deleting segment %s of %s after a truncated one", base, directory)
            seg.delete()
            continue
        needs_recovery = (
            not clean_shutdown
            and seg.size > 0
            and (base >= recovery_point or _next_base(bases, base) > recovery_point)
        )
        truncated = seg.load(recover=needs_recovery, on_batch=producers.load_batch)
        if truncated:
            log.warning("truncated %d torn or corrupt bytes at the end of %s", truncated, seg.log_path)
            truncated_total += truncated
            truncated_at = seg.next_offset
        if needs_recovery:
            seg.flush()
        segments.add(seg)
    if not segments:
        seg = _open(directory, max(log_start_offset, 0), config, now)
        segments.add(seg)
    next_offset = segments.last.next_offset
    if segments.last.size == 0:
        next_offset = segments.last.base_offset
    if next_offset < log_start_offset:
        log.warning(
            "log end %d of %s is below its log start offset %d: starting empty there",
            next_offset,
            directory,
            log_start_offset,
        )
        for seg in segments.snapshot():
            seg.delete()
        segments = Segments()
        producers.clear()
        segments.add(_open(directory, log_start_offset, config, now))
        next_offset = log_start_offset
    start = max(log_start_offset, segments.first.base_offset)
    # Recovered segments were fsynced above and a clean shutdown flushed everything: all is durable.
    return LoadedLog(segments, next_offset, next_offset, start, producers, truncated_total)


def _next_base(bases: set[int], base: int) -> int:
    later = [b for b in bases if b > base]
    return min(later) if later else 2**63 - 1
