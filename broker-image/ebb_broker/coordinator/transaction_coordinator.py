"""The transaction coordinator (KIP-98, Kafka's TransactionCoordinator and TransactionStateManager).

Every transactional id has a producer id, an epoch, a timeout and a state (Kafka's TransactionState):
Empty -> Ongoing (AddPartitionsToTxn / AddOffsetsToTxn) -> PrepareCommit or PrepareAbort (EndTxn) ->
CompleteCommit or CompleteAbort once every partition of the transaction has its marker. Each transition is
written to `__transaction_state` (Kafka's record format) before it is answered, and replayed on start: a
transaction caught in PrepareCommit/PrepareAbort by a restart gets its markers then, as Kafka's
coordinator completes it after a failover.

On one node the markers are written straight into the partitions' logs (`Log.append_marker`), and into
`__consumer_offsets` for the groups whose offsets the transaction committed (the group coordinator then
makes those offsets visible, or forgets them). So EndTxn completes before it is answered, and an
InitProducerId that fences an ongoing transaction aborts it on the spot rather than answering
CONCURRENT_TRANSACTIONS first.

Fencing: InitProducerId bumps the epoch (a new producer id once the epoch is exhausted), so a zombie
producer with the old epoch gets PRODUCER_FENCED; a transaction older than its timeout is aborted with a
bumped epoch too (transaction.abort.timed.out.transaction.cleanup.interval.ms). A transactional id unused
for transactional.id.expiration.ms is forgotten (a tombstone). Error codes are Kafka's numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kafka import errors as E

from ebb_broker.coordinator.offsets_store import OFFSETS_TOPIC_CONFIG, OffsetsStore
from ebb_broker.coordinator.timer import CoordinatorTimer
from ebb_broker.coordinator.transaction_records import TRANSACTION_STATE_TOPIC, TxnKey, TxnState, TxnValue
from ebb_broker.log.errors import LogError
from ebb_formats.consumer_offsets import OFFSETS_TOPIC, RecordFormatError

if TYPE_CHECKING:
    from ebb_broker.coordinator.group_coordinator import GroupCoordinator
    from ebb_broker.coordinator.producer_ids import ProducerIdManager
    from ebb_broker.log import LogManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
MAX_EPOCH = 32767  # Short.MAX_VALUE
NO_PRODUCER_ID = -1
NO_EPOCH = -1
_TIMEOUT_KEY = ("txn-abort-timed-out",)
_EXPIRE_KEY = ("txn-expire-ids",)


@dataclass(frozen=True)
class TransactionCoordinatorConfig:
    """Kafka's transaction coordinator settings and defaults."""

    state_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 7 * 24 * 3_600_000  # transactional.id.expiration.ms
    abort_check_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    expire_check_interval_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1

    def value(self) -> TxnValue:
        by_topic: dict[str, list[int]] = {}
        for topic, p in self.partitions:
            by_topic.setdefault(topic, []).append(p)
        return TxnValue(
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            self.state,
            by_topic,
            self.last_update_ms,
            self.start_ms,
        )


@dataclass(frozen=True)
class InitResult:
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class TransactionCoordinator:
    """Every transactional id of this broker (it coordinates all of them: it is the only node)."""

    def __init__(
        self,
        logs: LogManager,
        groups: GroupCoordinator,
        producer_ids: ProducerIdManager,
        timer: CoordinatorTimer,
        config: TransactionCoordinatorConfig | None = None,
    ):
        self.config = config or TransactionCoordinatorConfig()
        self.store = OffsetsStore(
            logs,
            self.config.state_partitions,
            topic=TRANSACTION_STATE_TOPIC,
            topic_config=OFFSETS_TOPIC_CONFIG,
        )
        self.logs = logs
        self.groups = groups
        self.producer_ids = producer_ids
        self.timer = timer
        self.txns: dict[str, TxnMetadata] = {}

    # ---- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Replay `__transaction_state` (if a transaction ever ran) and finish what a restart cut short."""
        if not self.store.exists():
            return
        self.store.ensure_topic()
        latest: dict[str, TxnValue | None] = {}
        for rec in self.store.replay():
            try:
                key = TxnKey.decode(rec.key)
                latest[key.transactional_id] = None if rec.value is None else TxnValue.decode(rec.value)
            except RecordFormatError as exc:
                log.warning("skipping unreadable %s record: %s", TRANSACTION_STATE_TOPIC, exc)
        for txn_id, value in latest.items():
            if value is None or value.state is TxnState.DEAD:
                continue
            partitions = {(t, p) for t, ids in value.partitions.items() for p in ids}
            self.txns[txn_id] = TxnMetadata(
                txn_id,
                value.producer_id,
                value.producer_epoch,
                value.timeout_ms,
                value.state,
                partitions,
                value.start_ms,
                value.last_update_ms,
            )
        for meta in list(self.txns.values()):
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._complete(meta, commit=meta.state is TxnState.PREPARE_COMMIT)
            elif meta.state is TxnState.PREPARE_EPOCH_FENCE:
                self._abort(meta, fence=False)
        log.info("loaded %d transactional ids", len(self.txns))

    def start(self) -> None:
        self.timer.schedule(_TIMEOUT_KEY, self.config.abort_check_interval_ms, self.abort_timed_out)
        self.timer.schedule(_EXPIRE_KEY, self.config.expire_check_interval_ms, self.expire_transactional_ids)

    def ensure_topic(self) -> None:
        """Kafka creates `__transaction_state` on the first transactional request."""
        self.store.ensure_topic()

    # ---- InitProducerId --------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_epoch: int = NO_EPOCH,
    ) -> InitResult:
        if not transactional_id:
            return InitResult(E.InvalidRequestError.errno)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(E.InvalidTransactionTimeoutError.errno)
        self.ensure_topic()
        now = self.timer.now_ms()
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = TxnMetadata(
                transactional_id, self.producer_ids.next_id(), NO_EPOCH, timeout_ms, TxnState.EMPTY
            )
        elif expected_producer_id != NO_PRODUCER_ID and (
            expected_producer_id != meta.producer_id or expected_epoch != meta.producer_epoch
        ):
            # KIP-360: a producer asking to bump an epoch that is no longer current is a zombie.
            return InitResult(E.ProducerFencedError.errno)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return InitResult(E.ConcurrentTransactionsError.errno)
        if meta.state is TxnState.ONGOING:
            # A new producer instance with the same transactional id: fence the old one and abort its
            # transaction (Kafka answers CONCURRENT_TRANSACTIONS until the abort completes, then bumps again).
            self._abort(meta, fence=True)
            meta = self.txns[transactional_id]
        new = replace(meta, timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=set(), last_update_ms=now)
        if new.producer_epoch >= MAX_EPOCH - 1:
            new.producer_id, new.producer_epoch = self.producer_ids.next_id(), 0
        else:
            new.producer_epoch += 1
        new.start_ms = -1
        self._persist(new)
        log.info(
            "transactional id %s: producer id %d epoch %d",
            transactional_id,
            new.producer_id,
            new.producer_epoch,
        )
        return InitResult(0, new.producer_id, new.producer_epoch)

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------

    def _check_producer(self, meta: TxnMetadata | None, producer_id: int, epoch: int) -> int:
        if meta is None or meta.producer_id != producer_id:
            return int(E.InvalidProducerIdMappingError.errno)
        if epoch != meta.producer_epoch:
            return int(E.ProducerFencedError.errno)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return int(E.ConcurrentTransactionsError.errno)
        return 0

    def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Add partitions to the producer's transaction (opening it); one error per partition."""
        wanted = list(dict.fromkeys(partitions))
        meta = self.txns.get(transactional_id)
        error = self._check_producer(meta, producer_id, epoch)
        if error:
            return dict.fromkeys(wanted, error)
        assert meta is not None
        topics = self.logs.topics()
        unknown = {tp for tp in wanted if tp[0] not in topics or not 0 <= tp[1] < topics[tp[0]].partitions}
        if unknown:
            return {
                tp: int(
                    E.UnknownTopicOrPartitionError.errno
                    if tp in unknown
                    else E.OperationNotAttemptedError.errno
                )
                for tp in wanted
            }
        if meta.state is TxnState.ONGOING and set(wanted) <= meta.partitions:
            return dict.fromkeys(wanted, 0)
        now = self.timer.now_ms()
        new = replace(
            meta, partitions=meta.partitions | set(wanted), state=TxnState.ONGOING, last_update_ms=now
        )
        if meta.state is not TxnState.ONGOING:
            new.start_ms = now
        self._persist(new)
        return dict.fromkeys(wanted, 0)

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction."""
        tp = (OFFSETS_TOPIC, self.groups.store.partition_for(group_id))
        return self.add_partitions(transactional_id, producer_id, epoch, [tp])[tp]

    def verify(self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition) -> int:
        """A transactional write (Produce, TxnOffsetCommit) is allowed: current producer, ongoing
        transaction holding the partition (Kafka's transaction verification, KIP-890)."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return int(E.InvalidProducerIdMappingError.errno)
        if epoch < meta.producer_epoch:
            return int(E.ProducerFencedError.errno)
        if epoch != meta.producer_epoch or meta.state is not TxnState.ONGOING or tp not in meta.partitions:
            return int(E.InvalidTxnStateError.errno)
        return 0

    # ---- EndTxn ----------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return int(E.InvalidProducerIdMappingError.errno)
        if epoch != meta.producer_epoch:
            return int(E.ProducerFencedError.errno)
        state = meta.state
        if state is TxnState.ONGOING:
            self._complete(meta, commit=commit)
            return 0
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            # a retried EndTxn for what already happened is fine; the opposite outcome is not
            same = (state is TxnState.COMPLETE_COMMIT) == commit
            return 0 if same else int(E.InvalidTxnStateError.errno)
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            same = (state is TxnState.PREPARE_COMMIT) == commit
            return int(E.ConcurrentTransactionsError.errno if same else E.InvalidTxnStateError.errno)
        return int(E.InvalidTxnStateError.errno)

    def _complete(self, meta: TxnMetadata, *, commit: bool) -> None:
        """PrepareCommit/PrepareAbort (stored), the markers, then CompleteCommit/CompleteAbort (stored)."""
        prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if meta.state is not prepare:
            meta = replace(meta, state=prepare, last_update_ms=self.timer.now_ms())
            self._persist(meta)
        self._write_markers(meta, commit=commit)
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        self._persist(replace(meta, state=done, partitions=set(), last_update_ms=self.timer.now_ms()))
        log.info(
            "transactional id %s: %s (producer %d epoch %d, %d partitions)",
            meta.transactional_id,
            "committed" if commit else "aborted",
            meta.producer_id,
            meta.producer_epoch,
            len(meta.partitions),
        )

    def _abort(self, meta: TxnMetadata, *, fence: bool) -> None:
        """Abort the ongoing transaction; with ``fence``, under a bumped epoch so its producer is fenced."""
        if fence:
            meta = replace(meta, producer_epoch=meta.producer_epoch + 1, state=TxnState.PREPARE_EPOCH_FENCE)
            self._persist(meta)
        self._complete(meta, commit=False)

    def _write_markers(self, meta: TxnMetadata, *, commit: bool) -> None:
        topics = self.logs.topics()
        for topic, p in sorted(meta.partitions):
            if topic not in topics or p >= topics[topic].partitions:
                log.warning("transaction %s: %s-%d is gone; no marker", meta.transactional_id, topic, p)
                continue
            try:
                self.logs.get_log(topic, p).append_marker(
                    meta.producer_id, meta.producer_epoch, commit=commit, coordinator_epoch=0
                )
            except LogError as exc:
                # Kafka retries markers until they are written; here they are local and cannot be retried
                # later without the transaction, so a failure is logged loudly and the partition skipped.
                log.error("transaction %s: marker for %s-%d failed: %s", meta.transactional_id, topic, p, exc)
                continue
            if topic == OFFSETS_TOPIC:
                self.groups.offsets.complete_txn_offsets(meta.producer_id, p, commit=commit)

    def _persist(self, meta: TxnMetadata) -> None:
        self.store.append(
            meta.transactional_id, [(TxnKey(meta.transactional_id).encode(), meta.value().encode())]
        )
        self.txns[meta.transactional_id] = meta

    # ---- timeouts and expiry ----------------------------------------------------------------

    def abort_timed_out(self) -> None:
        """Abort (and fence) transactions open longer than their timeout."""
        try:
            now = self.timer.now_ms()
            for meta in list(self.txns.values()):
                if meta.state is TxnState.ONGOING and 0 <= meta.start_ms <= now - meta.timeout_ms:
                    log.info(
                        "transactional id %s: timed out after %d ms", meta.transactional_id, meta.timeout_ms
                    )
                    self._abort(meta, fence=True)
        finally:
            self.timer.schedule(_TIMEOUT_KEY, self.config.abort_check_interval_ms, self.abort_timed_out)

    def expire_transactional_ids(self) -> None:
        """Forget transactional ids idle for transactional.id.expiration.ms (not in a transaction)."""
        try:
            now = self.timer.now_ms()
            idle = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            for meta in list(self.txns.values()):
                if meta.state in idle and meta.last_update_ms <= now - self.config.id_expiration_ms:
                    self.store.append(meta.transactional_id, [(TxnKey(meta.transactional_id).encode(), None)])
                    del self.txns[meta.transactional_id]
                    log.info("transactional id %s expired", meta.transactional_id)
        finally:
            self.timer.schedule(
                _EXPIRE_KEY, self.config.expire_check_interval_ms, self.expire_transactional_ids
            )

    # ---- describe --------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TxnMetadata | None:
        return self.txns.get(transactional_id)

    def list(self, states: set[str], producer_ids: set[int], min_duration_ms: int = -1) -> list[TxnMetadata]:
        """ListTransactions filters: state names (Kafka's), producer ids, running longer than (KIP-994)."""
        now = self.timer.now_ms()
        out = []
        for meta in self.txns.values():
            if states and meta.state.kafka_name not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (meta.start_ms < 0 or now - meta.start_ms < min_duration_ms):
                continue
            out.append(meta)
        return out
