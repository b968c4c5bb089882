"""Offsets retention (coordinator/expiry.py, KIP-211), restating Kafka's GroupMetadataManagerTest and
OffsetMetadataManagerTest expiration cases (testOffsetExpirationSemantics,
testOffsetExpirationOfSimpleConsumer, testOffsetExpirationOfActiveGroupSemantics,
testCleanupGroupMetadata...).

Kafka's rule: the offsets of an Empty group expire `offsets.retention.minutes` after the group became
Empty; those of a standalone group (it only commits) that long after their commit; a Stable consumer group
keeps the offsets of the topics it subscribes to and loses the others that long after their commit; any
other live group keeps everything. An Empty group left without offsets is deleted. Expired offsets and
deleted groups get tombstones in `__consumer_offsets`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ebb_broker.coordinator.expiry import expiration_base, expired
from ebb_broker.coordinator.group import Group, GroupState
from ebb_broker.coordinator.offsets import CommittedOffset
from ebb_formats.consumer_offsets import GroupMetadataKey, OffsetCommitKey, decode_key
from tests.unit.broker.coordinator.coordinator_context import (
    GROUP,
    TEST_CONFIG,
    CoordinatorContext,
    done,
    subscription,
)

RETENTION = 60_000
CHECK_INTERVAL = 1_000


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[CoordinatorContext]:
    config = replace(
        TEST_CONFIG,
        offsets_retention_ms=RETENTION,
        offsets_retention_check_interval_ms=CHECK_INTERVAL,
        min_session_timeout_ms=10,
    )
    c = CoordinatorContext(tmp_path / "data", config)
    yield c
    c.close()


def _stay_alive(ctx: CoordinatorContext, member_id: str, generation: int, ms: int) -> None:
    """Let `ms` pass while the member heartbeats every 5 s (its session is 10 s)."""
    for _ in range(-(-ms // 5_000)):
        ctx.advance(5_000)
        assert ctx.heartbeat(member_id, generation) == 0


def _tombstones(ctx: CoordinatorContext) -> set[object]:
    """Keys whose latest record in __consumer_offsets is a tombstone."""
    latest: dict[bytes, bytes | None] = {}
    for rec in ctx.store.replay():
        latest[rec.key] = rec.value
    return {decode_key(k) for k, v in latest.items() if v is None}


def test_standalone_offsets_expire_after_their_commit_and_the_group_goes(ctx: CoordinatorContext) -> None:
    """testOffsetExpirationOfSimpleConsumer: by commit time; the empty group is deleted with them."""
    assert ctx.commit("", -1, {("t", 0): 5}) == 0
    ctx.advance(RETENTION // 2)
    assert ctx.commit("", -1, {("t", 1): 6}) == 0
    ctx.advance(RETENTION // 2 + CHECK_INTERVAL)
    assert ctx.committed() == {("t", 1): 6}, "only the older commit expired"
    assert OffsetCommitKey(GROUP, "t", 0) in _tombstones(ctx)
    ctx.advance(RETENTION // 2)
    assert ctx.committed() == {} and GROUP not in ctx.coordinator.groups
    assert {OffsetCommitKey(GROUP, "t", 1), GroupMetadataKey(GROUP)} <= _tombstones(ctx)
    ctx.restart()
    assert GROUP not in ctx.coordinator.groups and ctx.committed() == {}


def test_an_empty_groups_offsets_expire_after_it_became_empty(ctx: CoordinatorContext) -> None:
    """testOffsetExpirationSemantics: the clock starts when the last member leaves, not at the commit."""
    first = ctx.join_first_member(session=10_000)
    done(ctx.sync(first.member_id, 1))
    assert ctx.commit(first.member_id, 1, {("t", 0): 3}) == 0
    _stay_alive(ctx, first.member_id, 1, RETENTION + CHECK_INTERVAL)  # an old commit, a live group
    assert ctx.committed() == {("t", 0): 3}
    ctx.leave((first.member_id, None))
    ctx.advance(RETENTION - CHECK_INTERVAL)
    assert ctx.committed() == {("t", 0): 3}, "expired before the group was empty that long"
    ctx.advance(2 * CHECK_INTERVAL)
    assert ctx.committed() == {} and GROUP not in ctx.coordinator.groups


def test_the_empty_since_time_survives_a_restart(ctx: CoordinatorContext) -> None:
    """The group record's current state timestamp keeps the expiry time across a restart."""
    first = ctx.join_first_member(session=10_000)
    done(ctx.sync(first.member_id, 1))
    ctx.commit(first.member_id, 1, {("t", 0): 3})
    ctx.leave((first.member_id, None))
    ctx.advance(RETENTION // 2)
    ctx.restart()
    assert ctx.group.state is GroupState.EMPTY
    ctx.advance(RETENTION // 2 + CHECK_INTERVAL)
    assert ctx.committed() == {}


def test_a_stable_consumer_group_keeps_the_offsets_of_its_topics(ctx: CoordinatorContext) -> None:
    """testOffsetExpirationOfActiveGroupSemantics: subscribed topics never expire while the group is
    Stable; an offset of a topic it no longer reads expires by its commit time."""
    first = ctx.join_first_member(session=10_000, protocols=[("range", subscription("read"))])
    done(ctx.sync(first.member_id, 1))
    ctx.commit(first.member_id, 1, {("read", 0): 1, ("dropped", 0): 2})
    _stay_alive(ctx, first.member_id, 1, RETENTION + 2 * CHECK_INTERVAL)
    assert ctx.committed() == {("read", 0): 1}
    assert GROUP in ctx.coordinator.groups


def test_a_live_group_of_another_protocol_keeps_everything(ctx: CoordinatorContext) -> None:
    """No expiry condition for a non-consumer group with members (Kafka returns Optional.empty)."""
    first = ctx.join_first_member(session=10_000, protocol_type="connect")
    done(ctx.sync(first.member_id, 1))
    ctx.commit(first.member_id, 1, {("t", 0): 1})
    _stay_alive(ctx, first.member_id, 1, RETENTION + 2 * CHECK_INTERVAL)
    assert ctx.committed() == {("t", 0): 1}


def test_an_empty_group_without_offsets_is_deleted_at_the_next_check(ctx: CoordinatorContext) -> None:
    """Kafka's cleanupGroupMetadata deletes an Empty group that has no offsets at all."""
    first = ctx.join_first_member(session=10_000)
    ctx.leave((first.member_id, None))
    assert ctx.group.state is GroupState.EMPTY
    ctx.advance(CHECK_INTERVAL)
    assert GROUP not in ctx.coordinator.groups
    assert GroupMetadataKey(GROUP) in _tombstones(ctx)


# ---- what an offset's retention counts from (Kafka's offsetExpirationCondition) -------------------


def test_what_an_offsets_retention_counts_from() -> None:
    committed = {("t", 0): CommittedOffset(1, -1, "", 1_000), ("u", 0): CommittedOffset(1, -1, "", 5_000)}
    standalone = Group("g")  # no protocol type: only commits
    assert expired(standalone, committed, 1_000 + RETENTION, RETENTION, set()) == [("t", 0)]
    assert expired(standalone, committed, 5_000 + RETENTION, RETENTION, {("u", 0)}) == [("t", 0)]
    # An Empty consumer group subscribes to nothing (its members are gone).
    empty = Group(
        "g", GroupState.EMPTY, protocol_type="consumer", state_timestamp=10_000, subscribed_topics=set()
    )
    assert expired(empty, committed, 10_000 + RETENTION - 1, RETENTION, set()) == []
    assert expired(empty, committed, 10_000 + RETENTION, RETENTION, set()) == [("t", 0), ("u", 0)]
    never_stamped = Group("g", GroupState.EMPTY, protocol_type="consumer", subscribed_topics=set())
    assert expired(never_stamped, committed, 1_000 + RETENTION, RETENTION, set()) == [("t", 0)]
    stable = Group("g", GroupState.STABLE, protocol_type="consumer", subscribed_topics={"t"})
    assert expired(stable, committed, 10**9, RETENTION, set()) == [("u", 0)]  # not a subscribed topic
    rebalancing = Group("g", GroupState.PREPARING_REBALANCE, protocol_type="consumer")
    assert (
        expiration_base(rebalancing) is None
        and expired(rebalancing, committed, 10**9, RETENTION, set()) is None
    )
