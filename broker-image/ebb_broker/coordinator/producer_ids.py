"""Producer id allocation for idempotent producers, unique across restarts.

Kafka's controller hands out blocks of producer ids and persists the next block; Ebb does the
same with a one-line file in the data directory (`producer-id-block`), written atomically
before any id of the new block is handed out, so a restart never reuses an id (which would make
the engine treat a new producer's first batches as duplicates).
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdManager:
    def __init__(self, data_dir: Path):
        self.path = data_dir / FILE_NAME
        self._next = 0
        self._block_end = 0
        if self.path.exists():
            text = self.path.read_text().strip()
            if not text.isdigit():
                raise ValueError(f"{self.path}: expected the next producer id block, got {text!r}")
            self._next = self._block_end = int(text)

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._persist(self._block_end + BLOCK_SIZE)
            self._block_end += BLOCK_SIZE
        pid = self._next
        self._next += 1
        return pid

    def _persist(self, value: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w") as f:
            f.write(f"{value}\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
