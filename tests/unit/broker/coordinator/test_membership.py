"""Classic group membership (coordinator/membership.py): JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
sessions, rebalances and static members, without sockets.

Each test restates a case of Kafka's GroupCoordinatorTest (core, Scala) or GroupMetadataManagerTest
(group-coordinator, Java) that applies to one node; the Kafka test name is in the docstring. Settings are
Kafka's test settings (`coordinator_context.TEST_CONFIG`): sessions and rebalance timeouts of 500 ms, a
50 ms initial rebalance delay, at most 4 members.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import errors as E

from ebb_broker.coordinator.group import GroupState
from tests.unit.broker.coordinator.coordinator_context import (
    GROUP,
    INITIAL_DELAY,
    PROTOCOL_SUPERSET,
    REBALANCE_TIMEOUT,
    SESSION_TIMEOUT,
    CoordinatorContext,
    done,
)


def _member_id_required(ctx: CoordinatorContext, **kwargs: object) -> str:
    first = done(ctx.join(require_known=True, **kwargs))  # type: ignore[arg-type]
    assert first.error == E.MemberIdRequiredError.errno and first.member_id
    return first.member_id


# ---- JoinGroup ------------------------------------------------------------------------------


@pytest.mark.parametrize("session", [9, 10 * 60 * 1000 + 1])
def test_join_with_a_session_timeout_out_of_bounds_is_refused(ctx: CoordinatorContext, session: int) -> None:
    """testJoinGroupSessionTimeoutTooSmall / TooLarge: INVALID_SESSION_TIMEOUT, no group created."""
    assert done(ctx.join(session=session)).error == E.InvalidSessionTimeoutError.errno
    assert GROUP not in ctx.coordinator.groups


def test_join_with_an_empty_group_id_is_refused(ctx: CoordinatorContext) -> None:
    """testInvalidGroupId."""
    assert done(ctx.join(group="")).error == E.InvalidGroupIdError.errno


def test_a_member_id_for_an_unknown_group_is_unknown(ctx: CoordinatorContext) -> None:
    """testJoinGroupUnknownConsumerNewGroup: UNKNOWN_MEMBER_ID, and no group is created."""
    assert done(ctx.join("some-member-id")).error == E.UnknownMemberIdError.errno
    assert GROUP not in ctx.coordinator.groups


def test_a_member_id_unknown_to_an_existing_group_is_refused(ctx: CoordinatorContext) -> None:
    """testJoinGroupUnknownConsumerExistingGroup."""
    ctx.join_first_member()
    assert done(ctx.join("not-a-member")).error == E.UnknownMemberIdError.errno


def test_member_id_required_then_join(ctx: CoordinatorContext) -> None:
    """testValidJoinGroup with KIP-394: the first JoinGroup hands out an id, the second joins with it."""
    member_id = _member_id_required(ctx)
    assert ctx.group.state is GroupState.EMPTY and member_id in ctx.group.pending_join_members
    future = ctx.join(member_id)
    assert not future.done(), "the first rebalance waits the initial delay"
    ctx.advance(INITIAL_DELAY)
    result = done(future)
    assert (result.error, result.generation, result.leader, result.member_id) == (0, 1, member_id, member_id)
    assert result.protocol_type == "consumer" and result.protocol == "range"
    assert [m[0] for m in result.members] == [member_id]
    assert ctx.group.state is GroupState.COMPLETING_REBALANCE


def test_a_pending_member_id_expires_with_its_session(ctx: CoordinatorContext) -> None:
    """testJoinGroupCompletionWhenPendingMemberTimesOut (the pending part)."""
    member_id = _member_id_required(ctx)
    ctx.advance(SESSION_TIMEOUT)
    assert member_id not in ctx.group.pending_join_members
    assert done(ctx.join(member_id)).error == E.UnknownMemberIdError.errno


@pytest.mark.parametrize(
    ("protocol_type", "protocols"),
    [("", [("range", b"")]), ("consumer", [])],
    ids=["empty-protocol-type", "no-protocols"],
)
def test_join_without_protocol_type_or_protocols_is_inconsistent(
    ctx: CoordinatorContext, protocol_type: str, protocols: list[tuple[str, bytes]]
) -> None:
    """testJoinGroupWithEmptyProtocolType / testJoinGroupWithEmptyGroupProtocol."""
    result = done(ctx.join(protocol_type=protocol_type, protocols=protocols))
    assert result.error == E.InconsistentGroupProtocolError.errno


def test_join_with_another_protocol_type_or_no_common_protocol(
    ctx: CoordinatorContext,
) -> None:
    """testJoinGroupInconsistentProtocolType / testJoinGroupInconsistentGroupProtocol."""
    ctx.join_first_member()
    assert done(ctx.join(protocol_type="connect")).error == E.InconsistentGroupProtocolError.errno
    assert done(ctx.join(protocols=[("sticky", b"")])).error == E.InconsistentGroupProtocolError.errno


def test_generation_increments_on_each_rebalance(ctx: CoordinatorContext) -> None:
    """testGenerationIdIncrementsOnRebalance: the leader rejoining in Stable starts a rebalance."""
    first = ctx.join_first_member()
    assert done(ctx.sync(first.member_id, 1, {first.member_id: b"a"})).assignment == b"a"
    again = done(ctx.join(first.member_id))
    assert (again.error, again.generation) == (0, 2)


def test_an_unchanged_follower_rejoining_does_not_rebalance(ctx: CoordinatorContext) -> None:
    """testJoinGroupFromUnchangedFollowerDoesNotRebalance."""
    r = ctx.two_members()
    again = done(ctx.join(r.follower_id))
    assert (again.error, again.generation, again.members) == (0, r.generation, [])
    assert ctx.group.state is GroupState.STABLE


def test_the_leader_rejoining_rebalances(ctx: CoordinatorContext) -> None:
    """testJoinGroupFromUnchangedLeaderShouldRebalance."""
    r = ctx.two_members()
    future = ctx.join(r.leader_id)
    assert ctx.group.state is GroupState.PREPARING_REBALANCE and not future.done()
    assert ctx.heartbeat(r.follower_id, r.generation) == E.RebalanceInProgressError.errno
    follower = done(ctx.join(r.follower_id))
    assert done(future).generation == follower.generation == r.generation + 1


def test_a_member_not_rejoining_within_the_rebalance_timeout_is_removed(
    ctx: CoordinatorContext,
) -> None:
    """testSecondMemberPartiallyJoinAndTimeout: the rebalance completes without it."""
    r = ctx.two_members(session=REBALANCE_TIMEOUT * 2)
    leader_f = ctx.join(r.leader_id)
    ctx.advance(REBALANCE_TIMEOUT - 1)
    assert not leader_f.done()
    ctx.advance(1)
    leader = done(leader_f)
    assert (leader.error, leader.generation) == (0, r.generation + 1)
    assert [m[0] for m in leader.members] == [r.leader_id]
    assert r.follower_id not in ctx.group.members


def test_a_pending_member_id_is_waited_for(
    ctx: CoordinatorContext,
) -> None:
    """testJoinGroupCompletionWhenPendingMemberJoins: pending members are waited for."""
    r = ctx.two_members()
    pending = _member_id_required(ctx)
    leader_f, follower_f = ctx.join(r.leader_id), ctx.join(r.follower_id)
    assert not leader_f.done(), "the pending member has not joined yet"
    third_f = ctx.join(pending)
    assert {done(f).generation for f in (leader_f, follower_f, third_f)} == {r.generation + 1}
    assert len(done(leader_f).members) == 3


def test_a_pending_member_leaving_lets_the_rebalance_complete(ctx: CoordinatorContext) -> None:
    """testPendingMembersLeavesGroup / testPendingMemberBatchLeaveGroup."""
    r = ctx.two_members()
    pending = _member_id_required(ctx)
    leader_f, follower_f = ctx.join(r.leader_id), ctx.join(r.follower_id)
    assert not leader_f.done()
    assert ctx.leave((pending, None)) == (0, [0])
    assert done(leader_f).generation == done(follower_f).generation == r.generation + 1


def test_group_max_size_refuses_the_member_beyond_it(ctx: CoordinatorContext) -> None:
    """testDynamicMembersJoinGroupWithMaxSize: group.max.size is 4."""
    futures = [ctx.join() for _ in range(4)]
    refused = done(ctx.join())
    assert (refused.error, refused.member_id) == (E.GroupMaxSizeReachedError.errno, "")
    ctx.initial_rebalance()
    assert all(done(f).error == 0 for f in futures)
    assert len(ctx.group.members) == 4


def test_a_new_member_whose_join_never_completes_expires(ctx: CoordinatorContext) -> None:
    """testNewMemberJoinExpiration: a new member parked in JoinGroup is dropped after 5 minutes."""
    r = ctx.two_members(session=10 * 60 * 1000)
    new_f = ctx.join(rebalance=10 * 60 * 1000)
    assert ctx.group.state is GroupState.PREPARING_REBALANCE
    new_id = next(m for m in ctx.group.members if m not in (r.leader_id, r.follower_id))
    ctx.advance(ctx.config.new_member_join_timeout_ms)
    assert done(new_f).error == E.UnknownMemberIdError.errno
    assert new_id not in ctx.group.members


# ---- initial rebalance delay (group.initial.rebalance.delay.ms) ----------------------------------


def test_the_initial_rebalance_waits_the_delay(ctx: CoordinatorContext) -> None:
    """shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup."""
    future = ctx.join()
    ctx.advance(INITIAL_DELAY // 2)
    assert not future.done()
    ctx.advance(INITIAL_DELAY // 2 + 1)
    assert done(future).error == 0


def test_a_member_joining_during_the_delay_extends_it(ctx: CoordinatorContext) -> None:
    """shouldResetRebalanceDelayWhenNewMemberJoinsGroupInInitialRebalance: both land in generation 1."""
    first = ctx.join(rebalance=INITIAL_DELAY * 3)
    ctx.advance(INITIAL_DELAY - 1)
    second = ctx.join(rebalance=INITIAL_DELAY * 3)
    ctx.advance(2)
    ctx.advance(INITIAL_DELAY // 2 + 1)
    assert not first.done() and not second.done()
    ctx.advance(INITIAL_DELAY // 2)
    assert done(first).generation == done(second).generation == 1
    assert len(done(first).members) == 2  # the first member leads and sees both


def test_the_initial_delay_is_capped_by_the_rebalance_timeout(ctx: CoordinatorContext) -> None:
    """shouldDelayRebalanceUptoRebalanceTimeout."""
    rebalance = INITIAL_DELAY * 2
    futures = [ctx.join(rebalance=rebalance), ctx.join(rebalance=rebalance)]
    ctx.advance(INITIAL_DELAY)  # a member arrived during the delay: extended, up to the rebalance timeout
    futures.append(ctx.join(rebalance=rebalance))
    ctx.advance(INITIAL_DELAY - 1)
    assert not any(f.done() for f in futures)
    ctx.advance(1)  # the rebalance timeout: no further extension although a third member arrived
    assert [done(f).generation for f in futures] == [1, 1, 1]


def test_no_initial_delay_when_configured_to_zero(tmp_path: Path) -> None:
    """group.initial.rebalance.delay.ms=0 (the test harnesses' setting): the join completes at once."""
    from dataclasses import replace

    from tests.unit.broker.coordinator.coordinator_context import TEST_CONFIG

    ctx = CoordinatorContext(tmp_path / "data", replace(TEST_CONFIG, initial_rebalance_delay_ms=0))
    try:
        future = ctx.join()
        ctx.advance(0)
        assert done(future).generation == 1
    finally:
        ctx.close()


# ---- SyncGroup ------------------------------------------------------------------------------


def test_sync_from_an_unknown_group_or_member_or_generation(ctx: CoordinatorContext) -> None:
    """testSyncGroupFromUnknownGroup / FromUnknownMember / FromIllegalGeneration."""
    assert done(ctx.sync("m", 1)).error == E.UnknownMemberIdError.errno
    first = ctx.join_first_member()
    assert done(ctx.sync("not-a-member", 1)).error == E.UnknownMemberIdError.errno
    assert done(ctx.sync(first.member_id, 2)).error == E.IllegalGenerationError.errno


def test_sync_with_an_empty_assignment(ctx: CoordinatorContext) -> None:
    """testSyncGroupEmptyAssignment: the group becomes Stable all the same."""
    first = ctx.join_first_member()
    result = done(ctx.sync(first.member_id, first.generation))
    assert (result.error, result.assignment) == (0, b"")
    assert ctx.group.state is GroupState.STABLE


def test_followers_wait_for_the_leader_sync(ctx: CoordinatorContext) -> None:
    """testSyncGroupFollowerAfterLeader / testSyncGroupLeaderAfterFollower."""
    a, b = ctx.join(), ctx.join()
    ctx.initial_rebalance()
    leader, follower = sorted((done(a), done(b)), key=lambda r: r.member_id != r.leader)
    follower_sync = ctx.sync(follower.member_id, follower.generation)
    assert not follower_sync.done()
    leader_sync = ctx.sync(
        leader.member_id, leader.generation, {leader.member_id: b"L", follower.member_id: b"F"}
    )
    assert done(leader_sync).assignment == b"L" and done(follower_sync).assignment == b"F"
    assert done(ctx.sync(follower.member_id, follower.generation)).assignment == b"F"  # Stable: again


def test_the_leader_leaving_during_the_sync_sends_followers_back_to_join(ctx: CoordinatorContext) -> None:
    """testLeaderFailureInSyncGroup: followers parked in SyncGroup get REBALANCE_IN_PROGRESS."""
    a, b = ctx.join(), ctx.join()
    ctx.initial_rebalance()
    leader, follower = sorted((done(a), done(b)), key=lambda r: r.member_id != r.leader)
    follower_sync = ctx.sync(follower.member_id, follower.generation)
    assert ctx.leave((leader.member_id, None)) == (0, [0])
    assert done(follower_sync).error == E.RebalanceInProgressError.errno
    assert ctx.group.state is GroupState.PREPARING_REBALANCE


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout(ctx: CoordinatorContext) -> None:
    """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers."""
    a, b = ctx.join(session=SESSION_TIMEOUT * 10), ctx.join(session=SESSION_TIMEOUT * 10)
    ctx.initial_rebalance()
    leader, follower = sorted((done(a), done(b)), key=lambda r: r.member_id != r.leader)
    ctx.sync(leader.member_id, leader.generation, {leader.member_id: b"L"})
    ctx.advance(REBALANCE_TIMEOUT)
    assert follower.member_id not in ctx.group.members
    assert ctx.group.state is GroupState.PREPARING_REBALANCE


def test_no_sync_timeout_when_everyone_synced(ctx: CoordinatorContext) -> None:
    """testRebalanceDoesNotTimeOutWhenAllSyncAreReceived."""
    r = ctx.two_members(session=REBALANCE_TIMEOUT * 10)
    ctx.advance(REBALANCE_TIMEOUT)
    assert ctx.group.state is GroupState.STABLE and set(ctx.group.members) == {r.leader_id, r.follower_id}


def test_sync_with_an_inconsistent_protocol_type_or_name(ctx: CoordinatorContext) -> None:
    """testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent / ...NameIsInconsistent."""
    first = ctx.join_first_member()
    bad_type = done(ctx.sync(first.member_id, 1, protocol_type="connect"))
    bad_name = done(ctx.sync(first.member_id, 1, protocol_name="roundrobin"))
    assert bad_type.error == bad_name.error == E.InconsistentGroupProtocolError.errno
    good = done(ctx.sync(first.member_id, 1, protocol_type="consumer", protocol_name="range"))
    assert (good.error, good.protocol_type, good.protocol) == (0, "consumer", "range")


# ---- Heartbeat and sessions -----------------------------------------------------------------


def test_heartbeat_errors(ctx: CoordinatorContext) -> None:
    """testHeartbeatUnknownGroup / UnknownConsumerExistingGroup / IllegalGeneration / testValidHeartbeat."""
    assert ctx.heartbeat("m", 1) == E.UnknownMemberIdError.errno
    first = ctx.join_first_member()
    done(ctx.sync(first.member_id, 1))
    assert ctx.heartbeat("not-a-member", 1) == E.UnknownMemberIdError.errno
    assert ctx.heartbeat(first.member_id, 2) == E.IllegalGenerationError.errno
    assert ctx.heartbeat(first.member_id, 1) == 0


def test_heartbeat_during_a_rebalance_says_rebalance_in_progress(ctx: CoordinatorContext) -> None:
    """testHeartbeatRebalanceInProgress / testHeartbeatDuringRebalanceCausesRebalanceInProgress."""
    r = ctx.two_members()
    ctx.join()  # a third member arrives
    assert ctx.heartbeat(r.leader_id, r.generation) == E.RebalanceInProgressError.errno


def test_a_silent_member_is_removed_when_its_session_expires(ctx: CoordinatorContext) -> None:
    """testSessionTimeout: the group rebalances without it; the others learn it from their heartbeat."""
    r = ctx.two_members()
    ctx.advance(SESSION_TIMEOUT // 2)
    assert ctx.heartbeat(r.leader_id, r.generation) == 0
    ctx.advance(SESSION_TIMEOUT // 2)
    assert r.follower_id not in ctx.group.members
    assert ctx.heartbeat(r.leader_id, r.generation) == E.RebalanceInProgressError.errno
    assert ctx.heartbeat(r.follower_id, r.generation) == E.UnknownMemberIdError.errno


def test_heartbeats_and_commits_keep_the_session(ctx: CoordinatorContext) -> None:
    """testHeartbeatMaintainsSession / testCommitMaintainsSession."""
    first = ctx.join_first_member()
    done(ctx.sync(first.member_id, 1))
    for i in range(6):
        ctx.advance(SESSION_TIMEOUT // 2)
        if i % 2:
            assert ctx.heartbeat(first.member_id, 1) == 0
        else:
            assert ctx.commit(first.member_id, 1, {("t", 0): i}) == 0
    assert first.member_id in ctx.group.members and ctx.group.state is GroupState.STABLE


def test_a_member_parked_in_join_does_not_expire(ctx: CoordinatorContext) -> None:
    """testSessionTimeoutDuringRebalance: a member waiting in JoinGroup satisfies its heartbeats."""
    short = SESSION_TIMEOUT // 2
    r = ctx.two_members(session=short)
    newcomer = ctx.join(session=short)
    leader_f = ctx.join(r.leader_id, session=short)
    ctx.advance(short)  # both old members' sessions pass; only the follower is not parked in JoinGroup
    result = done(leader_f)
    assert (result.error, result.generation) == (0, r.generation + 1)
    assert done(newcomer).generation == r.generation + 1
    assert r.leader_id in ctx.group.members and r.follower_id not in ctx.group.members


def test_the_session_deadline_follows_the_member_after_join(ctx: CoordinatorContext) -> None:
    """testNewMemberFailureAfterJoinGroupCompletion / ...AfterSyncGroupCompletion."""
    first = ctx.join_first_member()
    ctx.advance(SESSION_TIMEOUT)
    assert first.member_id not in ctx.group.members
    assert ctx.group.state is GroupState.EMPTY and ctx.group.generation == 2


# ---- LeaveGroup -----------------------------------------------------------------------------


def test_leave_errors(ctx: CoordinatorContext) -> None:
    """testLeaveGroupUnknownGroup / testLeaveGroupUnknownConsumerExistingGroup / testInvalidGroupId."""
    assert ctx.leave(("m", None)) == (0, [E.UnknownMemberIdError.errno])
    ctx.join_first_member()
    assert ctx.leave(("not-a-member", None)) == (0, [E.UnknownMemberIdError.errno])
    assert ctx.leave(("m", None), group="")[0] == E.InvalidGroupIdError.errno


def test_the_last_member_leaving_empties_the_group(ctx: CoordinatorContext) -> None:
    """testValidLeaveGroup: a new, empty generation is stored."""
    first = ctx.join_first_member()
    done(ctx.sync(first.member_id, 1))
    assert ctx.leave((first.member_id, None)) == (0, [0])
    assert (ctx.group.state, ctx.group.generation, ctx.group.leader) == (GroupState.EMPTY, 2, None)
    ctx.restart()
    assert (ctx.group.state, ctx.group.generation, ctx.group.members) == (GroupState.EMPTY, 2, {})


# ---- static membership (KIP-345) ------------------------------------------------------------


def test_a_restarted_static_follower_gets_its_assignment_without_a_rebalance(ctx: CoordinatorContext) -> None:
    """staticMemberRejoinAsFollowerWithUnknownMemberId: same generation, same assignment, the leader
    sees nothing; the old member id is fenced."""
    r = ctx.two_members(static=True)
    rejoined = done(ctx.join(instance="follower"))
    assert (rejoined.error, rejoined.generation, rejoined.leader) == (0, r.generation, r.leader_id)
    assert rejoined.member_id not in (r.follower_id, "")
    assert ctx.group.state is GroupState.STABLE
    assert ctx.heartbeat(r.leader_id, r.generation, instance="leader") == 0
    synced = done(ctx.sync(rejoined.member_id, r.generation, instance="follower"))
    assert (synced.error, synced.assignment) == (0, b"follower-assignment")
    fenced = E.FencedInstanceIdError.errno
    assert ctx.heartbeat(r.follower_id, r.generation, instance="follower") == fenced
    assert done(ctx.sync(r.follower_id, r.generation, instance="follower")).error == fenced
    assert ctx.commit(r.follower_id, r.generation, {("t", 0): 1}, instance="follower") == fenced
    assert done(ctx.join(r.follower_id, instance="follower")).error == fenced


@pytest.mark.parametrize("skip_assignment", [False, True], ids=["joingroup-v5", "joingroup-v9"])
def test_a_restarted_static_leader_does_not_rebalance(ctx: CoordinatorContext, skip_assignment: bool) -> None:
    """staticMemberRejoinWithLeaderIdAndUnknownMemberId: before v9 the old leader id comes back (so the
    restarted member does not assign); v9 says it leads but must skip the assignment (KIP-814)."""
    r = ctx.two_members(static=True)
    rejoined = done(ctx.join(instance="leader", skip_assignment=skip_assignment))
    assert (rejoined.error, rejoined.generation) == (0, r.generation)
    assert ctx.group.state is GroupState.STABLE and ctx.group.leader == rejoined.member_id
    if skip_assignment:
        assert rejoined.leader == rejoined.member_id and rejoined.skip_assignment
        assert len(rejoined.members) == 2
    else:
        assert rejoined.leader == r.leader_id and rejoined.members == []
    assert (
        done(ctx.sync(rejoined.member_id, r.generation, instance="leader")).assignment == b"leader-assignment"
    )
    assert done(ctx.sync(r.leader_id, r.generation)).error == E.UnknownMemberIdError.errno


def test_the_static_member_replacement_is_stored(ctx: CoordinatorContext) -> None:
    """The new member id survives a restart (the group record is rewritten)."""
    r = ctx.two_members(static=True)
    rejoined = done(ctx.join(instance="follower"))
    ctx.restart()
    assert ctx.group.static_members == {"leader": r.leader_id, "follower": rejoined.member_id}
    assert ctx.group.members[rejoined.member_id].assignment == b"follower-assignment"


def test_a_static_member_rejoining_with_a_protocol_change_rebalances(ctx: CoordinatorContext) -> None:
    """staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged."""
    r = ctx.two_members(static=True, protocols=PROTOCOL_SUPERSET)
    future = ctx.join(instance="follower", protocols=[("roundrobin", b"")])
    assert ctx.group.state is GroupState.PREPARING_REBALANCE and not future.done()
    leader = done(ctx.join(r.leader_id, instance="leader", protocols=[("roundrobin", b""), ("range", b"")]))
    assert leader.protocol == "roundrobin" and done(future).generation == r.generation + 1


def test_a_static_member_rejoining_during_the_sync_rebalances(ctx: CoordinatorContext) -> None:
    """staticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged: the old id is fenced, the group
    starts over because the leader may be assigning to the old id."""
    a, b = ctx.join(instance="leader"), ctx.join(instance="follower")
    ctx.initial_rebalance()
    leader, follower = done(a), done(b)
    old_sync = ctx.sync(follower.member_id, follower.generation, instance="follower")
    rejoin = ctx.join(instance="follower")
    assert done(old_sync).error == E.FencedInstanceIdError.errno
    assert ctx.group.state is GroupState.PREPARING_REBALANCE and not rejoin.done()
    done(ctx.join(leader.member_id, instance="leader"))
    assert done(rejoin).generation == leader.generation + 1


def test_a_static_follower_that_does_not_rejoin_keeps_its_place(ctx: CoordinatorContext) -> None:
    """testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout: static members that miss a
    rebalance stay in the group (only their session can remove them)."""
    r = ctx.two_members(static=True, session=REBALANCE_TIMEOUT * 2)
    newcomer = ctx.join(instance="newcomer", protocols=PROTOCOL_SUPERSET)
    leader_f = ctx.join(r.leader_id, instance="leader")
    ctx.advance(REBALANCE_TIMEOUT + 1)
    leader = done(leader_f)
    assert (leader.error, leader.generation, leader.leader) == (0, r.generation + 1, r.leader_id)
    assert {m[1] for m in leader.members} == {"leader", "follower", "newcomer"}
    assert done(newcomer).generation == r.generation + 1


def test_a_static_leader_that_does_not_rejoin_loses_the_lead(ctx: CoordinatorContext) -> None:
    """testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout: a member that rejoined leads."""
    r = ctx.two_members(static=True, session=REBALANCE_TIMEOUT * 2)
    newcomer = ctx.join(instance="newcomer")
    follower_f = ctx.join(r.follower_id, instance="follower")
    ctx.advance(REBALANCE_TIMEOUT + 1)
    assert ctx.group.leader in (r.follower_id, done(newcomer).member_id)
    assert done(follower_f).generation == r.generation + 1 and r.leader_id in ctx.group.members


def test_a_group_left_with_static_members_that_did_not_rejoin_waits_for_them(ctx: CoordinatorContext) -> None:
    """groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember: with only non-rejoined static members
    left, no generation starts; the group waits (their sessions will decide)."""
    r = ctx.two_members(static=True, session=SESSION_TIMEOUT * 2)
    dynamic_f = ctx.join(protocols=PROTOCOL_SUPERSET, session=SESSION_TIMEOUT * 2)
    ctx.advance(REBALANCE_TIMEOUT + 1)
    dynamic = done(dynamic_f)
    assert (dynamic.leader, dynamic.generation, len(dynamic.members)) == (
        dynamic.member_id,
        r.generation + 1,
        3,
    )
    assert ctx.group.state is GroupState.COMPLETING_REBALANCE
    assert ctx.leave((r.follower_id, None)) == (0, [0])
    assert ctx.group.state is GroupState.PREPARING_REBALANCE
    ctx.advance(REBALANCE_TIMEOUT + 1)
    assert list(ctx.group.members) == [r.leader_id]
    assert ctx.group.state is GroupState.PREPARING_REBALANCE


def test_closed_static_members_expire_then_the_group_can_be_deleted(ctx: CoordinatorContext) -> None:
    """KIP-345: static members that close send no LeaveGroup; their sessions remove them, the group
    becomes Empty and DeleteGroups succeeds."""
    r = ctx.two_members(static=True)
    assert ctx.commit(r.leader_id, r.generation, {("t", 0): 3}, instance="leader") == 0
    assert ctx.coordinator.delete_group(GROUP) == E.NonEmptyGroupError.errno
    ctx.advance(SESSION_TIMEOUT - 1)
    assert set(ctx.group.static_members) == {"leader", "follower"}
    ctx.advance(1)
    assert ctx.group.state is GroupState.EMPTY and ctx.group.static_members == {}
    assert ctx.coordinator.delete_group(GROUP) == 0
    assert GROUP not in ctx.coordinator.groups and ctx.committed() == {}


def test_leave_by_group_instance_id(ctx: CoordinatorContext) -> None:
    """testLeaveGroupStaticMemberWithUnknownMemberId / testStaticMembersValidBatchLeaveGroup /
    ...FencedInstanceBatchLeaveGroup / ...UnknownInstanceBatchLeaveGroup."""
    r = ctx.two_members(static=True)
    error, errors = ctx.leave(("", "leader"), ("wrong-id", "follower"), ("", "nobody"))
    assert error == 0
    assert errors == [0, E.FencedInstanceIdError.errno, E.UnknownMemberIdError.errno]
    assert set(ctx.group.static_members) == {"follower"}
    assert ctx.leave((r.follower_id, "follower")) == (0, [0])
