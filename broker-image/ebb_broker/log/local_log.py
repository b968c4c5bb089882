"""The segments of one partition on local disk (Kafka's LocalLog): roll, append, read, delete, swap.

Knows nothing of high watermarks, log start offsets or producers (``Log`` does). Not thread-safe: every
call happens under the owning ``Log``'s lock. Durability: appends reach the OS with one ``pwritev`` per
request, which is all a process crash (kill -9) needs; ``flush`` fsyncs up to the log end and moves the
recovery point, which bounds the work of recovery after an unclean shutdown.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from pathlib import Path

from ebb_broker.log import files
from ebb_broker.log.checkpoint import fsync_dir
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.segment import BatchInfo, Segment
from ebb_broker.log.segments import Segments

ScheduleDelete = Callable[[list[Path], int], None]
"""Called with files already renamed to ``.deleted`` and the delay (file.delete.delay.ms) to remove them."""


def delete_now(paths: list[Path], delay_ms: int) -> None:
    """The scheduler of a log without a LogManager: remove at once."""
    for p in paths:
        p.unlink(missing_ok=True)


class SwapStage(enum.Enum):
    """The steps of ``replace_segments``, in order; a crash hook may stop after any of them."""

    CLEANED_WRITTEN = "cleaned-written"
    RENAMED_TO_SWAP = "renamed-to-swap"
    OLD_RENAMED_DELETED = "old-renamed-deleted"
    SWAP_RENAMED_FINAL = "swap-renamed-final"


class LocalLog:
    """The segment list, rolling, the recovery point and segment replacement of one partition."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: Segments,
        next_offset: int,
        recovery_point: int,
        *,
        clock: Callable[[], int],
        schedule_delete: ScheduleDelete = delete_now,
    ) -> None:
        self.directory = directory
        self.config = config
        self.segments = segments
        self.next_offset = next_offset
        self.recovery_point = recovery_point
        self.clock = clock
        self.schedule_delete = schedule_delete

    def new_segment(self, base_offset: int, temp: str = "") -> Segment:
        return Segment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes,
            created_ms=self.clock(),
            temp=temp,
        )

    @property
    def active(self) -> Segment:
        return self.segments.last

    def roll(self) -> Segment:
        """Start a new active segment at the log end offset (no-op if the active one is empty there)."""
        active = self.active
        if active.size == 0 and active.base_offset == self.next_offset:
            return active
        active.on_become_inactive()
        active.flush()  # Kafka flushes the old segment asynchronously on roll; we do it inline
        seg = self.new_segment(self.next_offset)
        self.segments.add(seg)
        fsync_dir(self.directory)
        return seg

    def append(self, buffers: Sequence[bytes | memoryview], batches: Sequence[BatchInfo]) -> None:
        self.active.append(buffers, batches)
        self.next_offset = batches[-1].last_offset + 1

    def flush(self) -> None:
        """fsync every segment from the recovery point and advance it to the log end."""
        if self.recovery_point >= self.next_offset:
            return
        for seg in self.segments.from_offset(self.recovery_point):
            seg.flush()
        self.recovery_point = self.next_offset

    def remove_and_delete(self, segments: Sequence[Segment]) -> list[Path]:
        """Drop segments from the map, rename their files to .deleted and schedule their removal."""
        renamed: list[Path] = []
        for seg in segments:
            self.segments.remove(seg.base_offset)
            renamed += self._rename_deleted(seg)
        self.schedule_delete(renamed, self.config.file_delete_delay_ms)
        return renamed

    def _rename_deleted(self, seg: Segment) -> list[Path]:
        seg.close()
        out = []
        for path in seg.paths():
            if path.exists():
                target = path.with_name(path.name.removesuffix(seg.temp) + files.DELETED)
                path.replace(target)
                out.append(target)
        return out

    def replace_segments(
        self,
        new: Segment,
        old: Sequence[Segment],
        *,
        after_stage: Callable[[SwapStage], None] | None = None,
    ) -> None:
        """Swap the cleaner's ``.cleaned`` segment in for ``old`` (Kafka's LocalLog.replaceSegments).

        .cleaned -> .swap; add it to the map; old files -> .deleted (removed later); .swap -> final name;
        fsync the directory. Recovery (log_loader) finishes or undoes a swap interrupted at any step;
        ``after_stage`` lets tests stop between steps to prove it.
        """
        hook = after_stage or (lambda _stage: None)
        new.flush()
        hook(SwapStage.CLEANED_WRITTEN)
        new.change_temp_suffix(files.SWAP)
        fsync_dir(self.directory)
        hook(SwapStage.RENAMED_TO_SWAP)
        for seg in old:
            self.segments.remove(seg.base_offset)
        self.segments.add(new)
        renamed: list[Path] = []
        for seg in old:
            renamed += self._rename_deleted(seg)
        fsync_dir(self.directory)
        hook(SwapStage.OLD_RENAMED_DELETED)
        new.change_temp_suffix("")
        fsync_dir(self.directory)
        self.schedule_delete(renamed, self.config.file_delete_delay_ms)
        hook(SwapStage.SWAP_RENAMED_FINAL)

    def size_in_bytes(self) -> int:
        return self.segments.size_in_bytes()

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
