"""The transaction coordinator and transactional offset commits, without sockets (Kafka's
TransactionCoordinatorTest, TransactionStateManagerTest and the transactional cases of
GroupCoordinatorTest/OffsetMetadataManagerTest that apply to one node).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kafka import errors as E

from ebb_broker.coordinator.offsets import CommittedOffset
from ebb_broker.coordinator.producer_ids import ProducerIdManager
from ebb_broker.coordinator.transaction_coordinator import (
    TransactionCoordinator,
    TransactionCoordinatorConfig,
)
from ebb_broker.coordinator.transaction_records import TxnState
from ebb_broker.log.records import iter_headers
from ebb_formats.consumer_offsets import OFFSETS_TOPIC
from tests.unit.broker.coordinator.coordinator_context import CoordinatorContext

TXN = "txn-1"
TIMEOUT = 60_000
CONFIG = TransactionCoordinatorConfig(
    state_partitions=1,
    abort_check_interval_ms=1_000,
    expire_check_interval_ms=1_000,
    id_expiration_ms=600_000,
)


class TxnContext:
    def __init__(self, data_dir: Path):
        self.ctx = CoordinatorContext(data_dir)
        self.ctx.logs.create_topic("t", 2, {})
        self._open()

    def _open(self) -> None:
        ids = ProducerIdManager(self.ctx.data_dir)
        self.txn = TransactionCoordinator(self.ctx.logs, self.ctx.coordinator, ids, self.ctx.timer, CONFIG)
        self.txn.load()
        self.txn.start()

    def restart(self) -> None:
        self.ctx.restart()
        self._open()

    def markers(self, topic: str, partition: int) -> list[tuple[int, int, bool]]:
        """(producer id, epoch, is COMMIT) of every marker in a partition."""
        lg = self.ctx.logs.get_log(topic, partition)
        data = lg.read(lg.log_start_offset, 1 << 20).to_bytes()
        out = []
        for pos, h in iter_headers(data):
            if h.is_control:
                from ebb_broker.log.records import decode_records

                key = decode_records(data[pos : pos + h.size], h)[0].key
                assert key is not None
                out.append((h.producer_id, h.producer_epoch, key[3] == 1))
        return out

    def offset(self, group: str, offset: int) -> dict[tuple[str, int], CommittedOffset]:
        return {("t", 0): CommittedOffset(offset, -1, "", self.ctx.timer.now_ms())}


@pytest.fixture
def tc(tmp_path: Path) -> Iterator[TxnContext]:
    c = TxnContext(tmp_path / "data")
    yield c
    c.ctx.close()


def test_init_producer_id_allocates_then_bumps_the_epoch(tc: TxnContext) -> None:
    """shouldInitPidWithEpochZeroForNewTransactionalId / shouldIncrementEpochOnHandleInitPid..."""
    first = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert (first.error, first.producer_epoch) == (0, 0) and first.producer_id >= 0
    again = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)
    assert tc.txn.init_producer_id("other", TIMEOUT).producer_id != first.producer_id
    assert tc.txn.init_producer_id(TXN, 0).error == E.InvalidTransactionTimeoutError.errno
    assert tc.txn.init_producer_id(TXN, 900_001).error == E.InvalidTransactionTimeoutError.errno
    assert tc.txn.init_producer_id("", TIMEOUT).error == E.InvalidRequestError.errno


def test_kip360_epoch_bump_needs_the_current_epoch(tc: TxnContext) -> None:
    """A producer bumping its own epoch (InitProducerId v3+) is refused once another instance took over."""
    first = tc.txn.init_producer_id(TXN, TIMEOUT)
    second = tc.txn.init_producer_id(TXN, TIMEOUT)
    stale = tc.txn.init_producer_id(TXN, TIMEOUT, first.producer_id, first.producer_epoch)
    assert stale.error == E.ProducerFencedError.errno
    bumped = tc.txn.init_producer_id(TXN, TIMEOUT, second.producer_id, second.producer_epoch)
    assert (bumped.error, bumped.producer_epoch) == (0, second.producer_epoch + 1)


def test_add_partitions_errors_and_states(tc: TxnContext) -> None:
    """shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent /
    ...WhenPidDoesntMatch / shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent, and
    unknown partitions fail the whole request (UNKNOWN_TOPIC_OR_PARTITION, OPERATION_NOT_ATTEMPTED)."""
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert tc.txn.add_partitions("nobody", p.producer_id, 0, [("t", 0)]) == {
        ("t", 0): E.InvalidProducerIdMappingError.errno
    }
    assert (
        tc.txn.add_partitions(TXN, p.producer_id + 1, 0, [("t", 0)])[("t", 0)]
        == E.InvalidProducerIdMappingError.errno
    )
    assert tc.txn.add_partitions(TXN, p.producer_id, 9, [("t", 0)])[("t", 0)] == E.ProducerFencedError.errno
    assert tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0), ("nope", 0), ("t", 7)]) == {
        ("t", 0): E.OperationNotAttemptedError.errno,
        ("nope", 0): E.UnknownTopicOrPartitionError.errno,
        ("t", 7): E.UnknownTopicOrPartitionError.errno,
    }
    assert tc.txn.describe(TXN).state is TxnState.EMPTY  # type: ignore[union-attr]
    assert tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0)]) == {("t", 0): 0}
    meta = tc.txn.describe(TXN)
    assert meta is not None and meta.state is TxnState.ONGOING and meta.partitions == {("t", 0)}


def test_end_txn_writes_markers_and_completes(tc: TxnContext) -> None:
    """shouldAppendCompleteCommitToLogOnEndTxnWhenStatusIsOngoing...: one COMMIT marker per partition;
    a retried EndTxn is answered NONE, the opposite outcome INVALID_TXN_STATE."""
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == E.InvalidTxnStateError.errno  # Empty
    tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0), ("t", 1)])
    assert tc.txn.end_txn(TXN, p.producer_id, 1, commit=True) == E.ProducerFencedError.errno
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == 0
    assert tc.markers("t", 0) == tc.markers("t", 1) == [(p.producer_id, 0, True)]
    assert tc.txn.describe(TXN).state is TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == 0
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=False) == E.InvalidTxnStateError.errno


def test_a_new_instance_fences_the_old_and_aborts_its_transaction(tc: TxnContext) -> None:
    """shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState: the old epoch is
    fenced, its transaction aborted under the bumped epoch, the new instance gets the epoch after."""
    old = tc.txn.init_producer_id(TXN, TIMEOUT)
    tc.txn.add_partitions(TXN, old.producer_id, 0, [("t", 0)])
    lg = tc.ctx.logs.get_log("t", 0)
    from tests.unit.broker.log.test_transactions import txn_batch

    lg.append(txn_batch(old.producer_id, 0, b"zombie"))
    assert lg.last_stable_offset == 0
    new = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert (new.producer_id, new.producer_epoch) == (old.producer_id, 2)
    assert tc.markers("t", 0) == [(old.producer_id, 1, False)]
    assert lg.last_stable_offset == lg.high_watermark
    assert lg.collect_aborted_transactions(0, lg.high_watermark)[0].first_offset == 0
    assert tc.txn.add_partitions(TXN, old.producer_id, 0, [("t", 1)])[("t", 1)] == E.ProducerFencedError.errno
    assert tc.txn.verify(TXN, old.producer_id, 0, ("t", 0)) == E.ProducerFencedError.errno


def test_a_transaction_past_its_timeout_is_aborted_and_fenced(tc: TxnContext) -> None:
    """shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch."""
    p = tc.txn.init_producer_id(TXN, 5_000)
    tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0)])
    tc.ctx.advance(4_000)
    assert tc.txn.describe(TXN).state is TxnState.ONGOING  # type: ignore[union-attr]
    tc.ctx.advance(2_000)
    meta = tc.txn.describe(TXN)
    assert meta is not None and meta.state is TxnState.COMPLETE_ABORT and meta.producer_epoch == 1
    assert tc.markers("t", 0) == [(p.producer_id, 1, False)]
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == E.ProducerFencedError.errno


def test_idle_transactional_ids_expire(tc: TxnContext) -> None:
    """transactional.id.expiration.ms: an id not used that long is forgotten (a tombstone), not one in
    a transaction."""
    tc.txn.init_producer_id(TXN, TIMEOUT)
    busy = tc.txn.init_producer_id("busy", 900_000)
    tc.txn.add_partitions("busy", busy.producer_id, 0, [("t", 0)])
    tc.ctx.advance(CONFIG.id_expiration_ms - 1_000)
    assert tc.txn.describe(TXN) is not None
    tc.ctx.advance(2_000)
    assert tc.txn.describe(TXN) is None
    assert tc.txn.describe("busy").state is TxnState.ONGOING  # type: ignore[union-attr]
    tc.restart()
    assert tc.txn.describe(TXN) is None


def test_a_restart_completes_a_prepared_commit(tc: TxnContext) -> None:
    """A commit cut short after PrepareCommit was stored gets its markers at load (Kafka completes it
    after a coordinator failover)."""
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0)])
    meta = tc.txn.describe(TXN)
    assert meta is not None
    tc.txn._persist(replace(meta, state=TxnState.PREPARE_COMMIT))  # the broker stops before the markers
    tc.restart()
    assert tc.markers("t", 0) == [(p.producer_id, 0, True)]
    assert tc.txn.describe(TXN).state is TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_transactional_offsets_count_only_once_committed(tc: TxnContext) -> None:
    """KIP-98/447: TxnOffsetCommit offsets are invisible (OffsetFetch, KIP-68's snapshot) until the
    COMMIT marker; an ABORT drops them; both survive a restart as Kafka replays them."""
    group = "g"
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert tc.txn.add_offsets(TXN, p.producer_id, 0, group) == 0
    groups = tc.ctx.coordinator
    groups.offsets.commit(group, tc.offset(group, 3))  # an earlier plain commit
    assert groups.offsets.validate_txn_commit(group, -1, "", None) == 0
    groups.offsets.txn_commit(group, p.producer_id, 0, tc.offset(group, 7))
    assert tc.ctx.committed(group) == {("t", 0): 3}
    assert groups.offsets.has_pending_txn_offset(group, ("t", 0))
    assert groups.committed_snapshot([group]).by_group == {group: {("t", 0): 3}}
    tc.restart()  # still open after a restart
    groups = tc.ctx.coordinator
    assert tc.ctx.committed(group) == {("t", 0): 3} and groups.offsets.has_pending_txn_offset(group)
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == 0
    assert tc.ctx.committed(group) == {("t", 0): 7}
    assert groups.committed_snapshot([group]).by_group == {group: {("t", 0): 7}}
    offsets_partition = groups.store.partition_for(group)
    assert tc.markers(OFFSETS_TOPIC, offsets_partition) == [(p.producer_id, 0, True)]
    # an aborted one never counts, before or after a restart
    tc.txn.add_offsets(TXN, p.producer_id, 0, group)
    groups.offsets.txn_commit(group, p.producer_id, 0, tc.offset(group, 99))
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=False) == 0
    assert tc.ctx.committed(group) == {("t", 0): 7} and not groups.offsets.has_pending_txn_offset(group)
    tc.restart()
    assert tc.ctx.committed(group) == {("t", 0): 7}
    assert tc.ctx.coordinator.committed_snapshot([group]).by_group == {group: {("t", 0): 7}}


def test_transactional_commit_checks_the_member_generation(tc: TxnContext) -> None:
    """KIP-447: with a generation the member must be current (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID);
    without one any group accepts it, even a live one (older transactional producers)."""
    ctx = tc.ctx
    first = ctx.join_first_member()
    from tests.unit.broker.coordinator.coordinator_context import done

    done(ctx.sync(first.member_id, 1))
    groups = ctx.coordinator
    assert groups.offsets.validate_txn_commit(ctx.group.group_id, -1, "", None) == 0
    assert groups.offsets.validate_txn_commit(ctx.group.group_id, 1, first.member_id, None) == 0
    assert (
        groups.offsets.validate_txn_commit(ctx.group.group_id, 0, first.member_id, None)
        == E.IllegalGenerationError.errno
    )
    assert (
        groups.offsets.validate_txn_commit(ctx.group.group_id, 1, "nobody", None)
        == E.UnknownMemberIdError.errno
    )


def test_verify_refuses_writes_outside_the_transaction(tc: TxnContext) -> None:
    """Transaction verification (KIP-890): a write to a partition not added is INVALID_TXN_STATE."""
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert tc.txn.verify(TXN, p.producer_id, 0, ("t", 0)) == E.InvalidTxnStateError.errno
    tc.txn.add_partitions(TXN, p.producer_id, 0, [("t", 0)])
    assert tc.txn.verify(TXN, p.producer_id, 0, ("t", 0)) == 0
    assert tc.txn.verify(TXN, p.producer_id, 0, ("t", 1)) == E.InvalidTxnStateError.errno
    assert tc.txn.verify("nobody", p.producer_id, 0, ("t", 0)) == E.InvalidProducerIdMappingError.errno


def test_deleting_a_topic_drops_its_committed_and_pending_offsets(tc: TxnContext) -> None:
    """Kafka's onPartitionsDeleted: the deleted topic's commits get tombstones and its pending
    transactional offsets are dropped, so a later COMMIT marker does not bring them back, before or
    after a restart."""
    group = "g"
    p = tc.txn.init_producer_id(TXN, TIMEOUT)
    assert tc.txn.add_offsets(TXN, p.producer_id, 0, group) == 0
    groups = tc.ctx.coordinator
    groups.offsets.commit(group, tc.offset(group, 3))
    groups.offsets.commit(group, {("kept", 0): CommittedOffset(4, -1, "", 0)})
    groups.offsets.txn_commit(group, p.producer_id, 0, tc.offset(group, 7))
    assert groups.offsets.has_pending_txn_offset(group, ("t", 0))
    assert groups.offsets.on_topic_deleted("t") == 1
    assert not groups.offsets.has_pending_txn_offset(group)
    assert tc.txn.end_txn(TXN, p.producer_id, 0, commit=True) == 0
    assert tc.ctx.committed(group) == {("kept", 0): 4}
    tc.restart()
    assert tc.ctx.committed(group) == {("kept", 0): 4}
