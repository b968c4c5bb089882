"""Loading from `__consumer_offsets` (coordinator/loading.py): what a restart restores, restating
GroupMetadataManagerTest's load cases; and records Apache Kafka's coordinator wrote load as Kafka's do.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from kafka import errors as E

from ebb_broker.coordinator.group import GroupState
from ebb_broker.coordinator.loading import LoadedState, load
from ebb_formats.consumer_offsets import OFFSETS_TOPIC, GroupMetadataKey, OffsetCommitKey, OffsetCommitValue
from tests.unit.broker.coordinator.coordinator_context import (
    GROUP,
    SESSION_TIMEOUT,
    CoordinatorContext,
    done,
)

# ---- loading (GroupMetadataManagerTest) -----------------------------------------------------


def test_a_restart_restores_the_stable_group_and_its_members(ctx: CoordinatorContext) -> None:
    """testLoadGroupWithMembers / onLoaded: after a coordinator failover members carry on with the same
    member id and generation; a member that never comes back expires with its session."""
    r = ctx.two_members()
    ctx.commit(r.leader_id, r.generation, {("t", 0): 11})
    ctx.restart()
    g = ctx.group
    assert (g.state, g.generation, g.leader) == (GroupState.STABLE, r.generation, r.leader_id)
    assert g.members[r.follower_id].assignment == b"follower-assignment"
    assert ctx.committed() == {("t", 0): 11}
    assert ctx.heartbeat(r.leader_id, r.generation) == 0
    assert done(ctx.sync(r.follower_id, r.generation)).assignment == b"follower-assignment"
    for _ in range(3):
        ctx.advance(SESSION_TIMEOUT // 2)
        ctx.heartbeat(r.leader_id, r.generation)
    assert r.follower_id not in ctx.group.members, "the follower never came back"
    assert ctx.group.state is GroupState.PREPARING_REBALANCE


def test_a_restart_mid_rebalance_restores_the_last_stored_generation(ctx: CoordinatorContext) -> None:
    """Kafka stores a generation at its SyncGroup: a rebalance cut by a restart is forgotten and members
    of the new generation are told ILLEGAL_GENERATION, then rejoin."""
    r = ctx.two_members()
    leader_f, follower_f = ctx.join(r.leader_id), ctx.join(r.follower_id)
    new_gen = done(leader_f).generation
    assert done(follower_f).generation == new_gen == r.generation + 1
    ctx.restart()
    assert (ctx.group.state, ctx.group.generation) == (GroupState.STABLE, r.generation)
    assert done(ctx.sync(r.leader_id, new_gen)).error == E.IllegalGenerationError.errno
    assert ctx.heartbeat(r.follower_id, new_gen) == E.IllegalGenerationError.errno
    rejoin = ctx.join(r.leader_id)
    assert not rejoin.done() and ctx.group.state is GroupState.PREPARING_REBALANCE


def test_a_member_of_a_group_that_restarted_empty_must_rejoin(ctx: CoordinatorContext) -> None:
    """A member the restored group does not know (it left, or was never stored): UNKNOWN_MEMBER_ID."""
    first = ctx.join_first_member()
    done(ctx.sync(first.member_id, 1))
    ctx.leave((first.member_id, None))
    ctx.restart()
    assert ctx.heartbeat(first.member_id, 1) == E.UnknownMemberIdError.errno
    assert done(ctx.join(first.member_id)).error == E.UnknownMemberIdError.errno


def test_records_in_the_partition_earlier_versions_used_move_to_kafkas(tmp_path: Path) -> None:
    """Groups with a negative Java hashCode were stored in another partition than Kafka's
    Utils.abs(hashCode) % partitions: a restart loads them, moves the value to Kafka's partition and
    tombstones the old copy; a newer record in the proper partition wins over a misplaced one."""
    from ebb_formats.consumer_offsets import partition_for

    group = "Hello World!"  # hashCode -969099747: Kafka's partition 3 of 4, the masked hash's 1
    assert partition_for(group, 4) == 3
    ctx = CoordinatorContext(tmp_path / "data", offsets_partitions=4)
    try:
        old = [
            (OffsetCommitKey(group, "t", p).encode(), OffsetCommitValue(o).encode())
            for p, o in ((0, 5), (1, 6))
        ]
        ctx.store.append_to(1, old)
        ctx.store.append_to(
            3, [(OffsetCommitKey(group, "t", 1).encode(), OffsetCommitValue(8).encode())]
        )  # newer
        ctx.restart()
        assert ctx.committed(group) == {("t", 0): 5, ("t", 1): 8}
        latest: dict[tuple[int, bytes], bytes | None] = {}
        for rec in ctx.store.replay():
            latest[(rec.partition, rec.key)] = rec.value
        assert latest[(1, old[0][0])] is None and latest[(1, old[1][0])] is None
        assert latest[(3, old[0][0])] == old[0][1]
        ctx.restart()
        assert ctx.committed(group) == {("t", 0): 5, ("t", 1): 8}
    finally:
        ctx.close()


# ---- the loader itself ----------------------------------------------------------------------

VECTORS_FILE = Path(__file__).parents[2] / "formats" / "consumer_offsets_vectors.json"
VECTORS = {v["name"]: v for v in json.loads(VECTORS_FILE.read_text())["vectors"]}


def _commit(partition: int, offset: int) -> tuple[bytes, bytes]:
    return OffsetCommitKey(GROUP, "t", partition).encode(), OffsetCommitValue(offset).encode()


def _committed(state: LoadedState) -> dict[tuple[str, int], int]:
    return {tp: c.offset for tp, c in state.committed.get(GROUP, {}).items()}


def _append(ctx: CoordinatorContext, records: list[tuple[bytes, bytes | None]]) -> None:
    ctx.store.append_to(0, records)  # one partition in these tests


def test_records_apache_kafka_wrote_load_as_kafka_reads_them(ctx: CoordinatorContext) -> None:
    """What Kafka 4's coordinator writes (OffsetCommitValue v4 with its topic id tag, v1 with an expire
    timestamp) and every GroupMetadataValue version load; a tombstone deletes what it keys."""
    commit, expiring = (
        VECTORS["Kafka's coordinator: a commit"],
        VECTORS["Kafka's coordinator: a commit with an expire timestamp"],
    )
    _append(ctx, [(bytes.fromhex(commit["key"]), bytes.fromhex(commit["value"]))])
    state = load(ctx.store)
    assert {tp: c.offset for tp, c in state.committed["group-é"].items()} == {("orders", 7): 42}
    _append(ctx, [(bytes.fromhex(expiring["key"]), bytes.fromhex(expiring["value"]))])
    assert load(ctx.store).committed["group-é"][("orders", 7)].metadata == "meta"
    for version in range(5):
        value = bytes.fromhex(VECTORS[f"GroupMetadataValue v{version}"]["value"])
        _append(ctx, [(GroupMetadataKey(f"g{version}").encode(), value)])
    state = load(ctx.store)
    for version in range(5):
        group = state.groups[f"g{version}"]
        assert (group.state, group.generation, group.leader) == (GroupState.STABLE, 3, "m-1")
        assert group.subscribed_topics == {"orders", "payments"}
        assert group.members["m-1"].group_instance_id == ("static-1" if version >= 3 else None)
        # Before v1 no rebalance timeout was stored: the session timeout stands in for it.
        assert group.members["m-1"].rebalance_timeout_ms == (300_000 if version >= 1 else 45_000)
    tombstone = VECTORS["Kafka's coordinator: an offset tombstone"]
    _append(ctx, [(bytes.fromhex(tombstone["key"]), None), (GroupMetadataKey("g4").encode(), None)])
    state = load(ctx.store)
    assert "group-é" not in state.committed and "g4" not in state.groups


def test_an_unreadable_record_is_skipped_and_the_rest_loads(
    ctx: CoordinatorContext, caplog: pytest.LogCaptureFixture
) -> None:
    _append(
        ctx,
        [
            (OffsetCommitKey(GROUP, "t", 0).encode(), b"\x00\x09garbage"),  # a version Kafka never wrote
            (b"\x00", b"?"),  # a key too short to hold its type
            _commit(1, 7),
        ],
    )
    with caplog.at_level(logging.WARNING, logger="ebb_broker.coordinator.loading"):
        state = load(ctx.store)
    assert _committed(state) == {("t", 1): 7}
    assert "unknown OffsetCommitValue version 9" in caplog.text
    assert "unreadable __consumer_offsets key" in caplog.text


def test_transactional_offsets_count_from_their_commit_marker(ctx: CoordinatorContext) -> None:
    """Open: pending, not committed; COMMIT: committed; ABORT: gone; a tombstone drops a pending one."""
    plog = ctx.logs.get_log(OFFSETS_TOPIC, 0)
    ctx.store.append_transactional(GROUP, 100, 0, [_commit(0, 5)], 0)
    ctx.store.append_transactional(GROUP, 101, 0, [_commit(1, 6)], 0)
    state = load(ctx.store)
    assert _committed(state) == {} and set(state.pending_txn) == {100, 101}
    plog.append_marker(100, 0, commit=True, coordinator_epoch=0)
    state = load(ctx.store)
    assert _committed(state) == {("t", 0): 5} and set(state.pending_txn) == {101}
    _append(ctx, [(OffsetCommitKey(GROUP, "t", 1).encode(), None)])  # DeleteTopics' tombstone
    plog.append_marker(101, 0, commit=True, coordinator_epoch=0)
    assert _committed(load(ctx.store)) == {("t", 0): 5}
    ctx.store.append_transactional(GROUP, 102, 0, [_commit(2, 9)], 0)
    plog.append_marker(102, 0, commit=False, coordinator_epoch=0)
    state = load(ctx.store)
    assert _committed(state) == {("t", 0): 5} and not state.pending_txn
