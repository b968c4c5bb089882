"""Idempotent-producer state (Kafka's ProducerStateManager, without transactions).

Per producer id: the current epoch and the metadata of its last 5 batches (Kafka's
NUM_BATCHES_TO_RETAIN), so a retried batch is answered with its original offsets instead of being
written twice, a fenced epoch is refused and a gap in sequence numbers is refused.

Ebb rebuilds this state at startup by scanning batch headers (no ``.snapshot`` files); the cleaner keeps
each producer's newest batch (empty if all its records are superseded) so that scan still finds it. A
producer whose batches are all gone (retention) is unknown again and its next sequence is accepted as is,
as Kafka does for expired producer state since KIP-360. Not thread-safe: the log serialises access.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ebb_broker.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from ebb_broker.log.records import BatchHeader

BATCHES_TO_RETAIN = 5
_SEQ_MOD = 2**31


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.epoch, deque(self.batches, maxlen=BATCHES_TO_RETAIN))


class ProducerStateManager:
    """Producer id -> epoch and recent batches of one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def check(self, header: BatchHeader, pending: dict[int, ProducerEntry]) -> BatchMetadata | None:
        """Validate one incoming batch; return the cached metadata if it is a duplicate.

        ``pending`` holds entries already updated by earlier batches of the same request.
        """
        pid = header.producer_id
        if pid < 0 or header.base_sequence < 0:
            return None
        entry = pending.get(pid) or self._producers.get(pid)
        first, last = header.base_sequence, header.last_sequence
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} epoch {header.producer_epoch} is fenced by epoch {entry.epoch}"
            )
        if header.producer_epoch > entry.epoch:
            if first != 0:
                raise OutOfOrderSequenceError(
                    f"producer {pid} bumped its epoch to {header.producer_epoch} but starts at seq {first}"
                )
            return None
        for b in entry.batches:
            if b.first_seq == first and b.last_seq == last:
                return b
        if entry.batches:
            expected = (entry.batches[-1].last_seq + 1) % _SEQ_MOD
            if first != expected:
                raise OutOfOrderSequenceError(f"producer {pid} sent sequence {first}, expected {expected}")
        return None

    def stage(self, header: BatchHeader, pending: dict[int, ProducerEntry], timestamp: int) -> None:
        """Record an accepted (stamped) batch in ``pending``; ``commit`` makes it visible."""
        pid = header.producer_id
        if pid < 0 or header.base_sequence < 0:
            return
        entry = pending.get(pid)
        if entry is None:
            current = self._producers.get(pid)
            entry = current.copy() if current is not None else ProducerEntry(header.producer_epoch)
            pending[pid] = entry
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(
                header.base_sequence, header.last_sequence, header.base_offset, header.last_offset, timestamp
            )
        )

    def commit(self, pending: dict[int, ProducerEntry]) -> None:
        self._producers.update(pending)

    def load_batch(self, header: BatchHeader) -> None:
        """Replay one batch found on disk (startup)."""
        pending: dict[int, ProducerEntry] = {}
        self.stage(header, pending, header.max_timestamp)
        self.commit(pending)

    def last_offsets(self) -> set[int]:
        return {e.batches[-1].last_offset for e in self._producers.values() if e.batches}

    def clear(self) -> None:
        self._producers.clear()
