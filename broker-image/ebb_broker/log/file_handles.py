"""Segment and index files opened on demand, at most ``capacity`` at once (an LRU of descriptors).

Why: every segment has three files (.log, .index, .timeindex). Keeping all of them open made the number of
partitions and segments a data directory may hold depend on the process's descriptor limit: past it the
broker could not even restart on its own data. Here a file is opened at first use and closed again, least
recently used first, once more than ``capacity`` are open, so any number of segments opens within any limit
(a cold segment costs one ``open`` when it is read again). Kafka keeps every .log channel open and loads
indexes lazily (LazyIndex); closing .log files too is what makes a restart independent of the limit.

Thread-safety: ``use()`` pins the file for the duration of a ``with`` block and the cache only ever closes
unpinned files, so an eviction triggered by another thread (retention, the cleaner) can never close a
descriptor in use, nor let its number be reused for a different file mid-operation. Pinning and eviction
take one lock; the I/O itself runs outside it.

Only the first open creates a file (``O_CREAT``): a later reopen of a file that was renamed or removed
meanwhile raises ``FileNotFoundError`` instead of silently creating an empty one.

Fetch responses send from these same descriptors (``hold``/``release``): a response keeps its segment
files pinned until it is written, so however many responses, and however often one names the same
partition, a segment costs one descriptor, as Kafka's FileRecords share the segment's one FileChannel.
Held files count against the capacity: past half of it ``hold`` answers None and the caller reads the
bytes instead, so responses can never take the descriptors the log itself needs. ``close()`` of a held
file (retention or the cleaner deleting its segment) waits for the last release: the descriptor stays
valid, on the unlinked or renamed file, for the response being written.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path
from types import TracebackType

log = logging.getLogger(__name__)

# Descriptors kept free for sockets, fetch responses (one open file per sent slice), checkpoints and the
# cleaner's temporary files: a quarter of the limit, at least 256.
MIN_RESERVED_FDS = 256
# A partition's active segment keeps three files busy (.log, .index, .timeindex).
FILES_PER_PARTITION = 3


def descriptor_limit() -> int:
    """The process's soft RLIMIT_NOFILE (unlimited counts as 2**31 - 1)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY and soft > 0 else 2**31 - 1


def segment_file_budget(limit: int | None = None) -> int:
    """How many segment and index files may be open at once under ``limit`` (default: the process's)."""
    limit = descriptor_limit() if limit is None else limit
    return max(limit - max(MIN_RESERVED_FDS, limit // 4), 16)


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as the JVM does for Kafka (-XX:+MaxFDLimit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:  # e.g. an unlimited hard limit the kernel caps lower
            log.warning("could not raise the descriptor limit from %d to %d: %s", soft, hard, exc)
    return descriptor_limit()


class FileHandles:
    """The bounded set of open segment files, shared by every segment of the process."""

    def __init__(self, capacity: int) -> None:
        self._capacity = max(capacity, 1)
        self._lock = threading.Lock()
        self._open: OrderedDict[LazyFile, None] = OrderedDict()  # least recently used first
        self._held: dict[LazyFile, int] = {}  # files responses hold, with how many holds each

    @property
    def capacity(self) -> int:
        return self._capacity

    def resize(self, capacity: int) -> None:
        with self._lock:
            self._capacity = max(capacity, 1)
            self._evict(len(self._open) - self._capacity)

    @property
    def open_count(self) -> int:
        with self._lock:
            return len(self._open)

    def _pin(self, f: LazyFile) -> int:
        with self._lock:
            return self._pin_locked(f)

    def _pin_locked(self, f: LazyFile) -> int:
        if f.fd < 0:
            self._evict(len(self._open) + 1 - self._capacity)
            f.fd = self._open_fd(f)
            self._open[f] = None
        else:
            self._open.move_to_end(f)
        f.pins += 1
        return f.fd

    def _unpin(self, f: LazyFile) -> None:
        with self._lock:
            f.pins -= 1
            if f.pins == 0 and f.closing:
                self._close_locked(f)

    @property
    def held_count(self) -> int:
        """Distinct files held by responses being written."""
        with self._lock:
            return len(self._held)

    def _hold(self, f: LazyFile) -> int | None:
        """Pin ``f`` until ``_release``, unless that would make held files more than half the capacity."""
        with self._lock:
            if f not in self._held and len(self._held) >= self._capacity // 2:
                return None
            fd = self._pin_locked(f)
            self._held[f] = self._held.get(f, 0) + 1
            return fd

    def _release(self, f: LazyFile) -> None:
        with self._lock:
            left = self._held[f] - 1
            if left:
                self._held[f] = left
            else:
                del self._held[f]
        self._unpin(f)

    def _open_fd(self, f: LazyFile) -> int:
        flags = os.O_RDWR | (0 if f.created else os.O_CREAT)
        try:
            fd = os.open(f.path, flags, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            # Sockets or fetches took the reserve: give back half of the idle files and try once more.
            self._evict(max(len(self._open) // 2, 1))
            fd = os.open(f.path, flags, 0o644)
        f.created = True
        return fd

    def _evict(self, count: int) -> None:
        """Close up to ``count`` unpinned files, least recently used first (lock held)."""
        if count <= 0:
            return
        for victim in [f for f in self._open if f.pins == 0][:count]:
            del self._open[victim]
            os.close(victim.fd)
            victim.fd = -1

    def _close(self, f: LazyFile) -> None:
        with self._lock:
            if f.pins:
                f.closing = True  # closed by the last unpin: a response is still sending from it
            else:
                self._close_locked(f)

    def _close_locked(self, f: LazyFile) -> None:
        f.closing = False
        if f.fd >= 0:
            self._open.pop(f, None)
            os.close(f.fd)
            f.fd = -1


_DEFAULT = FileHandles(segment_file_budget())


def default_handles() -> FileHandles:
    """The process-wide cache every segment uses unless given another (tests)."""
    return _DEFAULT


class LazyFile:
    """One segment or index file: ``with f as fd:`` opens it if needed and keeps it open for the block."""

    __slots__ = ("closing", "created", "fd", "handles", "path", "pins")

    def __init__(self, path: Path, handles: FileHandles | None = None) -> None:
        self.path = path
        self.handles = handles or _DEFAULT
        self.fd = -1
        self.pins = 0
        self.created = False
        self.closing = False

    def __enter__(self) -> int:
        return self.handles._pin(self)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.handles._unpin(self)

    def rename(self, path: Path) -> None:
        """Move the file (if it exists) to ``path``; an open descriptor stays valid."""
        if self.path.exists():
            self.path.replace(path)
        self.path = path

    def hold(self) -> int | None:
        """The descriptor, pinned until ``release()`` (a response being written); None when held files
        already fill half the cache: read the bytes instead."""
        return self.handles._hold(self)

    def release(self) -> None:
        self.handles._release(self)

    def close(self) -> None:
        """Close the descriptor now, or when the last pin goes if the file is in use."""
        self.handles._close(self)
