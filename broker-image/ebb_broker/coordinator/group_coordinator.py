"""The classic group coordinator: membership, rebalances, and committed offsets.

It follows Kafka's classic `GroupCoordinator` (KIP-394 MEMBER_ID_REQUIRED, KIP-345 static
membership for member ids keyed by group.instance.id) on one event loop, so no locks are needed.
Offsets and group metadata are written to `__consumer_offsets` before they are acknowledged, and
replayed from it on start. It also hands the engine its KIP-68 input (`committed_snapshot`).
Error codes are Kafka's numbers from kafka-python's error table.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass

from kafka import errors as E

from ebb_broker.coordinator.group import Group, GroupState, JoinResult, Member
from ebb_broker.coordinator.offsets_records import (
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_key,
)
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.log import CommittedOffsets

log = logging.getLogger(__name__)

# Kafka's group.min/max.session.timeout.ms defaults.
MIN_SESSION_TIMEOUT_MS = 6_000
MAX_SESSION_TIMEOUT_MS = 1_800_000
_EXPIRY_TICK_S = 0.25


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator:
    """Every group of this broker (the broker coordinates all of them: it is the only node)."""

    def __init__(self, store: OffsetsStore, *, min_session_timeout_ms: int = MIN_SESSION_TIMEOUT_MS):
        self.store = store
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self.min_session_timeout_ms = min_session_timeout_ms
        self.loaded = False
        self._expiry_task: asyncio.Task[None] | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Replay `__consumer_offsets`: the latest record per key wins, a tombstone removes it."""
        self.store.ensure_topic()
        offsets: dict[OffsetKey, CommittedOffset] = {}
        groups: dict[str, GroupValue] = {}
        for key_bytes, value in self.store.replay():
            try:
                key = decode_key(key_bytes)
                if isinstance(key, OffsetKey):
                    if value is None:
                        offsets.pop(key, None)
                    else:
                        v = OffsetValue.decode(value)
                        offsets[key] = CommittedOffset(
                            v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
                        )
                elif isinstance(key, GroupKey):
                    if value is None:
                        groups.pop(key.group, None)
                    else:
                        groups[key.group] = GroupValue.decode(value)
            except RecordFormatError as exc:
                log.warning("skipping unreadable %s record: %s", self.store.partitions, exc)
        for key, committed in offsets.items():
            self.offsets.setdefault(key.group, {})[(key.topic, key.partition)] = committed
        for group_id, gv in groups.items():
            # Members are not restored: they rejoin (UNKNOWN_MEMBER_ID makes clients reset their id).
            self.groups[group_id] = Group(
                group_id,
                GroupState.EMPTY,
                gv.generation,
                gv.protocol_type or None,
                gv.protocol,
                None,
                state_timestamp=gv.current_state_timestamp,
            )
        for group_id in self.offsets:
            self.groups.setdefault(group_id, Group(group_id))
        self.loaded = True
        log.info("loaded %d groups and %d committed offsets", len(self.groups), len(offsets))

    def start(self) -> None:
        self._expiry_task = asyncio.get_running_loop().create_task(self._expire_sessions())

    async def stop(self) -> None:
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            try:
                await self._expiry_task
            except asyncio.CancelledError:
                pass

    # ---- KIP-68 input ----------------------------------------------------------------------

    def committed_snapshot(self) -> CommittedOffsets:
        """The minimum committed offset of every partition over every group, frozen for the retention
        pass (which runs off the event loop); unknown until __consumer_offsets is loaded. Call it on the
        event loop, which owns this state."""
        if not self.loaded:
            return CommittedOffsets(known=False)
        minimums: dict[tuple[str, int], int] = {}
        for committed in self.offsets.values():
            for tp, c in committed.items():
                if tp not in minimums or c.offset < minimums[tp]:
                    minimums[tp] = c.offset
        return CommittedOffsets(minimums)

    # ---- membership ------------------------------------------------------------------------

    async def join(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult:
        if not group_id:
            return JoinResult(E.InvalidGroupIdError.errno, member_id=member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            return JoinResult(E.InvalidSessionTimeoutError.errno, member_id=member_id)
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            group = self.groups[group_id] = Group(group_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(E.InconsistentGroupProtocolError.errno, member_id=member_id)

        if group_instance_id is not None:
            # KIP-345: a static member keeps its place; a new member id replaces the old one.
            for existing in list(group.members.values()):
                if existing.group_instance_id == group_instance_id and existing.member_id != member_id:
                    if member_id:
                        return JoinResult(E.FencedInstanceIdError.errno, member_id=member_id)
                    self._remove_member(group, existing)
        if not member_id:
            new_id = f"{group_instance_id or client_id}-{uuid.uuid4()}"
            if require_known_member_id and group_instance_id is None:
                # KIP-394: hand out the id and make the client rejoin with it.
                group.pending_members[new_id] = time.monotonic() + session_timeout_ms / 1000
                return JoinResult(E.MemberIdRequiredError.errno, member_id=new_id)
            member_id = new_id
        elif member_id not in group.members and member_id not in group.pending_members:
            return JoinResult(E.UnknownMemberIdError.errno, member_id=member_id)

        group.pending_members.pop(member_id, None)
        member = group.members.get(member_id)
        loop = asyncio.get_running_loop()
        if member is None:
            member = Member(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
            )
            group.members[member_id] = member
            if group.protocol_type is None:
                group.protocol_type = protocol_type
        elif group.state is GroupState.STABLE and member.protocols == protocols and member_id != group.leader:
            # Kafka: a follower rejoining with unchanged metadata just gets the current generation.
            member.last_heartbeat = time.monotonic()
            return JoinResult(
                0, group.generation, group.protocol_type, group.protocol, group.leader or "", member_id
            )
        else:
            member.protocols = protocols
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.last_heartbeat = time.monotonic()
        if member.join_waiter is None or member.join_waiter.done():
            member.join_waiter = loop.create_future()
        # A repeated JoinGroup (a client retrying on a new connection) shares the pending outcome.
        waiter = member.join_waiter
        self._prepare_rebalance(group, f"member {member_id} joined")
        self._maybe_complete_join(group)
        return await waiter

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            # Members waiting in SyncGroup must rejoin.
            for m in group.members.values():
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result((E.RebalanceInProgressError.errno, b""))
        if group.state is not GroupState.PREPARING_REBALANCE:
            log.info("group %s: preparing rebalance (%s)", group.group_id, reason)
            group.state = GroupState.PREPARING_REBALANCE
            timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
            loop = asyncio.get_running_loop()
            group.rebalance_deadline = loop.call_later(timeout_ms / 1000, self._rebalance_timed_out, group)

    def _rebalance_timed_out(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        for m in list(group.members.values()):
            if m.join_waiter is None or m.join_waiter.done():
                log.info("group %s: member %s did not rejoin in time", group.group_id, m.member_id)
                self._remove_member(group, m)
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.rebalance_deadline is not None:
            group.rebalance_deadline.cancel()
            group.rebalance_deadline = None
        group.generation += 1
        group.state_timestamp = _now_ms()
        if not group.members:
            group.state = GroupState.EMPTY
            group.protocol = None
            group.leader = None
            self._persist_group(group)
            return
        group.state = GroupState.COMPLETING_REBALANCE
        group.protocol = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        log.info(
            "group %s: generation %d with %d members, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.leader,
        )
        everyone = [
            (m.member_id, m.group_instance_id, m.metadata_for(group.protocol)) for m in group.members.values()
        ]
        for m in group.members.values():
            m.last_heartbeat = time.monotonic()
            if m.join_waiter is not None and not m.join_waiter.done():
                m.join_waiter.set_result(
                    JoinResult(
                        0,
                        group.generation,
                        group.protocol_type,
                        group.protocol,
                        group.leader or "",
                        m.member_id,
                        everyone if m.member_id == group.leader else [],
                    )
                )

    async def sync(
        self,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> tuple[int, bytes]:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return E.UnknownMemberIdError.errno, b""
        member = group.members.get(member_id)
        if member is None:
            return E.UnknownMemberIdError.errno, b""
        if member.group_instance_id != group_instance_id and group_instance_id is not None:
            return E.FencedInstanceIdError.errno, b""
        if generation != group.generation:
            log.info(
                "group %s: SyncGroup from %s for stale generation %d (now %d)",
                group_id,
                member_id,
                generation,
                group.generation,
            )
            return E.IllegalGenerationError.errno, b""
        if group.state is GroupState.PREPARING_REBALANCE:
            return E.RebalanceInProgressError.errno, b""
        if group.state is GroupState.STABLE:
            return 0, member.assignment
        # CompletingRebalance: the leader's assignment completes it; followers wait for it.
        member.last_heartbeat = time.monotonic()
        if member_id == group.leader:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self._persist_group(group)
            group.state = GroupState.STABLE
            group.state_timestamp = _now_ms()
            log.info(
                "group %s: generation %d stable (assignment from leader %s)", group_id, generation, member_id
            )
            for m in group.members.values():
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result((0, m.assignment))
            return 0, member.assignment
        member.sync_waiter = asyncio.get_running_loop().create_future()
        return await member.sync_waiter

    def heartbeat(self, group_id: str, generation: int, member_id: str, group_instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return E.UnknownMemberIdError.errno
        member = group.members.get(member_id)
        if member is None:
            return E.UnknownMemberIdError.errno
        if group_instance_id is not None and member.group_instance_id != group_instance_id:
            return E.FencedInstanceIdError.errno
        if generation != group.generation:
            return E.IllegalGenerationError.errno
        member.last_heartbeat = time.monotonic()
        if group.state is GroupState.PREPARING_REBALANCE:
            return E.RebalanceInProgressError.errno
        return 0

    def leave(self, group_id: str, member_id: str, group_instance_id: str | None) -> int:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return E.UnknownMemberIdError.errno
        member = group.members.get(member_id)
        if member is None and group_instance_id is not None:
            member = next(
                (m for m in group.members.values() if m.group_instance_id == group_instance_id), None
            )
        if member is None:
            return E.UnknownMemberIdError.errno
        log.info("group %s: member %s left", group_id, member.member_id)
        self._remove_member(group, member)
        self._after_member_loss(group, "member left")
        return 0

    def _remove_member(self, group: Group, member: Member) -> None:
        group.members.pop(member.member_id, None)
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(
                JoinResult(E.UnknownMemberIdError.errno, member_id=member.member_id)
            )
        if member.sync_waiter is not None and not member.sync_waiter.done():
            member.sync_waiter.set_result((E.UnknownMemberIdError.errno, b""))
        if group.leader == member.member_id:
            group.leader = next(iter(group.members), None)

    def _after_member_loss(self, group: Group, reason: str) -> None:
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
            if not group.members:
                self._complete_join(group)
        elif group.members:
            self._prepare_rebalance(group, reason)
        else:
            self._prepare_rebalance(group, reason)
            self._complete_join(group)

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(_EXPIRY_TICK_S)
            now = time.monotonic()
            for group in list(self.groups.values()):
                for pid, deadline in list(group.pending_members.items()):
                    if deadline < now:
                        del group.pending_members[pid]
                expired = [
                    m
                    for m in group.members.values()
                    if not m.awaiting and now - m.last_heartbeat > m.session_timeout_ms / 1000
                ]
                for m in expired:
                    log.info("group %s: member %s session expired", group.group_id, m.member_id)
                    self._remove_member(group, m)
                if expired:
                    self._after_member_loss(group, "session expired")

    def _persist_group(self, group: Group) -> None:
        value = GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=group.protocol,
            leader=group.leader,
            current_state_timestamp=group.state_timestamp,
            members=[
                MemberRecord(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(group.protocol),
                    m.assignment,
                )
                for m in group.members.values()
            ],
        )
        self.store.append(group.group_id, [(GroupKey(group.group_id).encode(), value.encode())])

    # ---- offsets ---------------------------------------------------------------------------

    def check_commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's doCommitOffsets checks: who may commit for the group right now."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return 0 if generation < 0 else E.IllegalGenerationError.errno
        if generation < 0 and not group.members:
            return 0
        member = group.members.get(member_id)
        if member is None:
            return E.UnknownMemberIdError.errno
        if group_instance_id is not None and member.group_instance_id != group_instance_id:
            return E.FencedInstanceIdError.errno
        if generation != group.generation:
            return E.IllegalGenerationError.errno
        if group.state is GroupState.COMPLETING_REBALANCE:
            return E.RebalanceInProgressError.errno
        member.last_heartbeat = time.monotonic()
        return 0

    def commit(self, group_id: str, commits: dict[tuple[str, int], CommittedOffset]) -> None:
        """Write the commits to `__consumer_offsets`, then make them visible."""
        records = [
            (
                OffsetKey(group_id, t, p).encode(),
                OffsetValue(c.offset, c.leader_epoch, c.metadata, c.commit_timestamp).encode(),
            )
            for (t, p), c in commits.items()
        ]
        self.store.append(group_id, records)
        self.offsets.setdefault(group_id, {}).update(commits)
        self.groups.setdefault(group_id, Group(group_id))

    def fetch(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.offsets.get(group_id, {})

    def list_groups(self) -> list[Group]:
        return [g for g in self.groups.values() if g.state is not GroupState.DEAD]

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups: tombstones for the group and every offset; only an empty group."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return E.GroupIdNotFoundError.errno
        if group.members:
            return E.NonEmptyGroupError.errno
        tombstones: list[tuple[bytes, bytes | None]] = [
            (OffsetKey(group_id, t, p).encode(), None) for (t, p) in self.offsets.get(group_id, {})
        ]
        tombstones.append((GroupKey(group_id).encode(), None))
        self.store.append(group_id, tombstones)
        self.offsets.pop(group_id, None)
        group.state = GroupState.DEAD
        del self.groups[group_id]
        return 0

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """OffsetDelete: per-partition errors; refused for topics the live group subscribes to."""
        group = self.groups.get(group_id)
        if group is None:
            return {tp: E.GroupIdNotFoundError.errno for tp in partitions}
        subscribed = group.subscribed_topics() if group.members else set()
        result: dict[tuple[str, int], int] = {}
        removed: list[tuple[str, int]] = []
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                result[tp] = E.GroupSubscribedToTopicError.errno
            else:
                result[tp] = 0
                if tp in self.offsets.get(group_id, {}):
                    removed.append(tp)
        if removed:
            self.store.append(group_id, [(OffsetKey(group_id, t, p).encode(), None) for t, p in removed])
            for tp in removed:
                self.offsets[group_id].pop(tp, None)
        return result
