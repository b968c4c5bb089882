"""Producer state of one partition (Kafka's ProducerStateManager).

Per producer id: the current epoch and the metadata of its last 5 batches (Kafka's
NUM_BATCHES_TO_RETAIN), so a retried batch is answered with its original offsets instead of being
written twice, a fenced epoch is refused and a gap in sequence numbers is refused. For transactions
(KIP-98): the first offset of the producer's ongoing transaction, until the coordinator's COMMIT or ABORT
marker completes it; the smallest of those is the partition's first unstable offset, which bounds the
last stable offset (what read_committed consumers may read).

Ebb rebuilds this state at startup by scanning batch headers (no ``.snapshot`` files); the cleaner keeps
each producer's newest batch (empty if all its records are superseded) so that scan still finds it. A
producer whose batches are all gone (retention) is unknown again and its next sequence is accepted as is,
as Kafka does for expired producer state since KIP-360. Not thread-safe: the log serialises access.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ebb_broker.log.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from ebb_formats.record_batch import COMMIT, BatchHeader

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
    txn_first_offset: int | None = None  # first offset of the ongoing transaction, if any
    coordinator_epoch: int = -1
    last_timestamp: int = -1  # of its last batch or marker (producer.id.expiration.ms)

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.epoch,
            deque(self.batches, maxlen=BATCHES_TO_RETAIN),
            self.txn_first_offset,
            self.coordinator_epoch,
            self.last_timestamp,
        )


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker completed: [first_offset, last_offset] (the marker's offset)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    """Producer id -> epoch and recent batches of one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> dict[int, ProducerEntry]:
        return {pid: e.copy() for pid, e in self._producers.items()}

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
        entry.last_timestamp = timestamp
        entry.batches.append(
            BatchMetadata(
                header.base_sequence, header.last_sequence, header.base_offset, header.last_offset, timestamp
            )
        )

    def commit(self, pending: dict[int, ProducerEntry]) -> None:
        self._producers.update(pending)

    def begin_txn(
        self, pending: dict[int, ProducerEntry], producer_id: int, producer_epoch: int, first_offset: int
    ) -> None:
        """A transactional batch was stamped at ``first_offset``: it opens a transaction if none is open
        (also for the coordinator's own transactional writes, which carry no sequence)."""
        entry = pending.get(producer_id)
        if entry is None:
            current = self._producers.get(producer_id)
            entry = current.copy() if current is not None else ProducerEntry(producer_epoch)
            pending[producer_id] = entry
        if entry.txn_first_offset is None:
            entry.txn_first_offset = first_offset

    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int | None = None
    ) -> None:
        """A marker's epoch may not be older than the producer's, nor its coordinator epoch older than the
        last marker's (a zombie coordinator's write; Kafka's ProducerAppendInfo.checkCoordinatorEpoch)."""
        entry = self._producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} epoch {producer_epoch} is fenced by epoch {entry.epoch}"
            )
        if (
            entry is not None
            and coordinator_epoch is not None
            and coordinator_epoch < entry.coordinator_epoch
        ):
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} with coordinator epoch {coordinator_epoch} is fenced by "
                f"coordinator epoch {entry.coordinator_epoch}"
            )

    def complete_txn(
        self,
        producer_id: int,
        producer_epoch: int,
        marker_offset: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        timestamp: int,
    ) -> CompletedTxn:
        """A COMMIT or ABORT marker at ``marker_offset`` ends the producer's transaction (an empty one,
        when the producer wrote nothing here: it starts and ends at the marker, as Kafka's)."""
        self.check_marker(producer_id, producer_epoch)
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(producer_epoch)
        if producer_epoch > entry.epoch:
            # the coordinator fenced the producer with a bumped epoch: its next batch starts at sequence 0
            entry.epoch = producer_epoch
            entry.batches.clear()
        first = entry.txn_first_offset if entry.txn_first_offset is not None else marker_offset
        entry.txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return CompletedTxn(producer_id, first, marker_offset, aborted=not commit)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction (None: no transaction is open)."""
        return min(
            (e.txn_first_offset for e in self._producers.values() if e.txn_first_offset is not None),
            default=None,
        )

    def ongoing(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction."""
        return {
            pid: e.txn_first_offset for pid, e in self._producers.items() if e.txn_first_offset is not None
        }

    def load_batch(self, header: BatchHeader, control_type: int | None = None) -> CompletedTxn | None:
        """Replay one batch found on disk (startup); a marker returns the transaction it completed."""
        if header.is_control:
            if control_type is None or header.producer_id < 0:
                return None
            return self.complete_txn(
                header.producer_id,
                header.producer_epoch,
                header.base_offset,
                commit=control_type == COMMIT,
                coordinator_epoch=-1,
                timestamp=header.max_timestamp,
            )
        pending: dict[int, ProducerEntry] = {}
        self.stage(header, pending, header.max_timestamp)
        if header.is_transactional and header.producer_id >= 0:
            self.begin_txn(pending, header.producer_id, header.producer_epoch, header.base_offset)
        self.commit(pending)
        return None

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (producer.id.expiration.ms) with no open
        transaction; their next batch is accepted as a new producer's. Returns how many went."""
        gone = [
            pid
            for pid, e in self._producers.items()
            if e.txn_first_offset is None and 0 <= e.last_timestamp <= now_ms - expiration_ms
        ]
        for pid in gone:
            del self._producers[pid]
        return len(gone)

    def last_offsets(self) -> set[int]:
        return {e.batches[-1].last_offset for e in self._producers.values() if e.batches}

    def clear(self) -> None:
        self._producers.clear()
