"""A segment's aborted transactions (Kafka's TransactionIndex, the ``.txnindex`` file).

Each entry is Kafka's AbortedTxn, 34 bytes big-endian: version int16 (0), producerId int64, firstOffset
int64, lastOffset int64 (the ABORT marker's offset), lastStableOffset int64. An entry goes into the index
of the segment that holds its ABORT marker, so the entries of all segments from the one holding a fetch
offset onwards are every aborted transaction that can overlap that fetch (Kafka's
collectAbortedTransactions). The file is created on the first entry, like Kafka's; entries are kept in
memory too (a segment rarely has many). Not thread-safe: the log serialises access.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log.errors import CorruptIndexError

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The aborted transactions whose ABORT marker lies in one segment."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        if path.exists():
            self.entries = self._read(path)

    @staticmethod
    def _read(path: Path) -> list[AbortedTxn]:
        data = path.read_bytes()
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(f"{path}: size {len(data)} is not a multiple of {ENTRY_SIZE}")
        out = []
        for version, pid, first, last, lso in _ENTRY.iter_unpack(data):
            if version != _VERSION:
                raise CorruptIndexError(f"{path}: unknown entry version {version}")
            out.append(AbortedTxn(pid, first, last, lso))
        return out

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset < self.entries[-1].last_offset:
            raise CorruptIndexError(
                f"{self.path}: aborted transaction ending at {txn.last_offset} after one ending at "
                f"{self.entries[-1].last_offset}"
            )
        with self.path.open("ab") as f:
            f.write(
                _ENTRY.pack(
                    _VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
                )
            )
        self.entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries whose transaction overlaps [fetch_offset, upper_bound)."""
        return [t for t in self.entries if t.last_offset >= fetch_offset and t.first_offset < upper_bound]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or beyond ``offset`` (recovery truncated the log there)."""
        kept = [t for t in self.entries if t.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def reset(self) -> None:
        self.entries = []
        self.path.unlink(missing_ok=True)

    def _rewrite(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        data = b"".join(
            _ENTRY.pack(_VERSION, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            for t in self.entries
        )
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(self.path)

    def flush(self) -> None:
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            self.path.replace(path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
