"""Committed offsets (coordinator/offsets.py): who may commit (Kafka's validateOffsetCommit), DeleteGroups
and OffsetDelete, restating GroupCoordinatorTest and OffsetMetadataManagerTest cases (names in the
docstrings); transactional offsets are test_transaction_coordinator.py's, with their markers.
"""

from __future__ import annotations

from pathlib import Path

from kafka import errors as E

from ebb_broker.coordinator.group import GroupState
from ebb_broker.coordinator.offsets import CommittedOffset
from tests.unit.broker.coordinator.coordinator_context import (
    GROUP,
    CoordinatorContext,
    done,
    subscription,
)

# ---- OffsetCommit ---------------------------------------------------------------------------


def test_commit_to_an_unknown_group(ctx: CoordinatorContext) -> None:
    """testCommitOffsetFromUnknownGroup: generation -1 creates a standalone group; a member's commit is
    refused with ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from OffsetCommit v9)."""
    assert ctx.commit("m", 1, {("t", 0): 1}) == E.IllegalGenerationError.errno
    assert ctx.commit("m", 1, {("t", 0): 1}, api_version=9) == E.GroupIdNotFoundError.errno
    assert ctx.commit("", -1, {("t", 0): 7}) == 0
    assert ctx.committed() == {("t", 0): 7} and ctx.group.state is GroupState.EMPTY


def test_commit_with_the_default_generation_to_an_empty_group(ctx: CoordinatorContext) -> None:
    """testCommitOffsetWithDefaultGeneration / testCommitOffsetsAfterGroupIsEmpty."""
    first = ctx.join_first_member()
    done(ctx.sync(first.member_id, 1))
    assert ctx.commit("", -1, {("t", 0): 1}) == E.UnknownMemberIdError.errno, "only members may commit"
    ctx.leave((first.member_id, None))
    assert ctx.commit("", -1, {("t", 0): 2}) == 0
    assert ctx.committed() == {("t", 0): 2}


def test_commit_from_a_member_of_an_older_generation_is_refused(ctx: CoordinatorContext) -> None:
    """A consumer that missed a rebalance cannot commit over the new owner: ILLEGAL_GENERATION."""
    r = ctx.two_members()
    assert ctx.commit(r.follower_id, r.generation, {("t", 0): 5}) == 0
    leader_f, follower_f = ctx.join(r.leader_id), ctx.join(r.follower_id)
    new_gen = done(leader_f).generation
    done(ctx.sync(r.leader_id, new_gen))
    done(ctx.sync(r.follower_id, new_gen))
    assert done(follower_f).generation == new_gen
    assert ctx.commit(r.follower_id, r.generation, {("t", 0): 9}) == E.IllegalGenerationError.errno
    assert ctx.committed() == {("t", 0): 5}


def test_commit_during_completing_rebalance(ctx: CoordinatorContext) -> None:
    """testCommitOffsetInCompletingRebalance / ...FromUnknownMemberId / ...FromIllegalGeneration."""
    first = ctx.join_first_member()
    assert ctx.group.state is GroupState.COMPLETING_REBALANCE
    assert ctx.commit(first.member_id, 1, {("t", 0): 1}) == E.RebalanceInProgressError.errno
    assert ctx.commit("unknown", 1, {("t", 0): 1}) == E.UnknownMemberIdError.errno
    assert ctx.commit(first.member_id, 2, {("t", 0): 1}) == E.IllegalGenerationError.errno


def test_commit_during_preparing_rebalance_is_accepted(ctx: CoordinatorContext) -> None:
    """Kafka lets a current member commit while the group prepares a rebalance (the heartbeat tells it
    to rejoin), so a consumer can commit what it processed before giving up its partitions."""
    r = ctx.two_members()
    ctx.join()  # a newcomer
    assert ctx.group.state is GroupState.PREPARING_REBALANCE
    assert ctx.commit(r.follower_id, r.generation, {("t", 0): 3}) == 0


# ---- DeleteGroups and OffsetDelete ----------------------------------------------------------


def test_delete_groups(ctx: CoordinatorContext) -> None:
    """testDeleteNonEmptyGroup / testDeleteEmptyGroup / testDeleteEmptyGroupWithStoredOffsets: the
    tombstones keep the group deleted across a restart."""
    assert ctx.coordinator.delete_group(GROUP) == E.GroupIdNotFoundError.errno
    first = ctx.join_first_member()
    assert ctx.coordinator.delete_group(GROUP) == E.NonEmptyGroupError.errno
    ctx.leave((first.member_id, None))
    ctx.commit("", -1, {("t", 0): 4})
    assert ctx.coordinator.delete_group(GROUP) == 0
    assert GROUP not in ctx.coordinator.groups and ctx.committed() == {}
    ctx.restart()
    assert GROUP not in ctx.coordinator.groups and ctx.committed() == {}


def test_offset_delete(ctx: CoordinatorContext) -> None:
    """testDeleteOffsetOfNonExistingGroup / OfStableConsumerGroup / OfEmptyConsumerGroup: a live
    consumer group keeps the offsets of the topics it subscribes to."""
    assert ctx.coordinator.offsets.delete_offsets(GROUP, [("t", 0)]) == (E.GroupIdNotFoundError.errno, {})
    first = ctx.join_first_member(protocols=[("range", subscription("t"))])
    done(ctx.sync(first.member_id, 1))
    ctx.commit(first.member_id, 1, {("t", 0): 1, ("other", 0): 2})
    error, per_partition = ctx.coordinator.offsets.delete_offsets(GROUP, [("t", 0), ("other", 0)])
    assert (error, per_partition) == (0, {("t", 0): E.GroupSubscribedToTopicError.errno, ("other", 0): 0})
    assert ctx.committed() == {("t", 0): 1}
    ctx.leave((first.member_id, None))
    assert ctx.coordinator.offsets.delete_offsets(GROUP, [("t", 0)]) == (0, {("t", 0): 0})
    assert ctx.committed() == {}


def test_offset_delete_of_a_non_consumer_group_with_members(ctx: CoordinatorContext) -> None:
    """testDeleteOffsetOfNonEmptyNonConsumerGroup: NON_EMPTY_GROUP."""
    ctx.join_first_member(protocol_type="connect")
    assert ctx.coordinator.offsets.delete_offsets(GROUP, [("t", 0)]) == (E.NonEmptyGroupError.errno, {})


# ---- transactional offsets (KIP-98, KIP-447) --------------------------------------------------


def test_transactional_offsets_wait_for_the_marker_of_their_groups_partition(tmp_path: Path) -> None:
    """The marker the transaction coordinator writes to one `__consumer_offsets` partition completes the
    pending offsets of the groups stored there, and only those (Kafka's completeTransaction). Markers in
    the log, and a restart, are test_transaction_coordinator.py's."""
    ctx = CoordinatorContext(tmp_path / "data", offsets_partitions=4)
    try:
        offsets = ctx.coordinator.offsets
        g1, g2 = "group-c", "group-a"  # partitions 1 and 3 of 4
        assert (ctx.store.partition_for(g1), ctx.store.partition_for(g2)) == (1, 3)
        commit = {("t", 0): CommittedOffset(5, -1, "", 0)}
        offsets.txn_commit(g1, 7, 0, commit)
        offsets.txn_commit(g2, 7, 0, commit)
        assert offsets.fetch(g1) == {} and offsets.has_pending_txn_offset(g1, ("t", 0))
        assert offsets.pending_partitions(g2) == {("t", 0)}
        offsets.complete_txn_offsets(7, 1, commit=True)
        assert offsets.fetch(g1) == commit and not offsets.has_pending_txn_offset(g1)
        assert offsets.has_pending_txn_offset(g2)
        offsets.complete_txn_offsets(7, 3, commit=False)
        assert offsets.fetch(g2) == {} and offsets.pending_txn == {}
    finally:
        ctx.close()
