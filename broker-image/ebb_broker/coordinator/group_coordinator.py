"""The classic group coordinator: membership, rebalances, committed offsets and their expiry.

It restates Kafka's classic group coordinator (GroupMetadataManager and OffsetMetadataManager of Kafka
4.x, the Scala GroupCoordinator before it) on one event loop, so no locks are needed:
- JoinGroup parks until every member rejoined or the rebalance timeout passes; a new group's first
  rebalance waits `group.initial.rebalance.delay.ms`, extended while members keep arriving, capped by
  the rebalance timeout (Kafka's InitialDelayedJoin), so consumers started together share a generation.
- KIP-394 MEMBER_ID_REQUIRED; KIP-345 static members: a static member that restarts takes its old
  place and assignment without a rebalance reaching the others, a stale member id is fenced
  (FENCED_INSTANCE_ID), and a static member that never returns is removed when its session expires.
- Sessions, rebalances, pending SyncGroups and the offsets retention check are keyed timers
  (`timer.CoordinatorTimer`), rescheduled the way Kafka's coordinator timer does.
- Group metadata and offsets are written to `__consumer_offsets` before they are acknowledged and
  replayed on start, members included: after a restart clients find their group Stable in its last
  stored generation, as clients of Kafka do after a coordinator failover.
- KIP-211: `offsets.retention.minutes` expires the offsets of a group Empty for that long (standalone
  commits: since the commit) with tombstones, and then the group itself.
Error codes are Kafka's numbers from kafka-python's error table.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from kafka import errors as E

from ebb_broker.coordinator.group import Group, GroupState, JoinResult, Member, SyncResult
from ebb_broker.coordinator.offsets import CommittedOffset, OffsetManager, Record, commit_record, tombstone
from ebb_broker.coordinator.offsets_records import (
    OFFSETS_TOPIC,
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_key,
)
from ebb_broker.coordinator.offsets_store import COMMIT_MARKER, OffsetsStore
from ebb_broker.coordinator.timer import CoordinatorTimer
from ebb_broker.log import CommittedOffsets

log = logging.getLogger(__name__)

__all__ = ["CommittedOffset", "GroupCoordinator", "GroupCoordinatorConfig"]

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    """The coordinator's settings, with Kafka's defaults (the broker config gives them Kafka's names)."""

    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_size: int = INT_MAX  # group.max.size
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    new_member_join_timeout_ms: int = 300_000  # Kafka's NewMemberJoinTimeoutMs (not configurable)
    offsets_retention_ms: int = 7 * 24 * 3_600_000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes


def _heartbeat_key(group_id: str, member_id: str) -> Hashable:
    return ("heartbeat", group_id, member_id)


def _join_key(group_id: str) -> Hashable:
    return ("join", group_id)


def _sync_key(group_id: str) -> Hashable:
    return ("sync", group_id)


_RETENTION_KEY = ("offsets-retention",)


class GroupCoordinator:
    """Every group of this broker (the broker coordinates all of them: it is the only node)."""

    def __init__(
        self,
        store: OffsetsStore,
        timer: CoordinatorTimer,
        config: GroupCoordinatorConfig | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
    ):
        self.store = store
        self.timer = timer
        self.config = config or GroupCoordinatorConfig()
        self._loop = loop
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetManager()
        # Transactional offset commits (KIP-98) awaiting their transaction's marker:
        # producer id -> group -> partition -> offset. They count for nothing (KIP-68 included) until
        # the COMMIT marker, and are forgotten at the ABORT marker.
        self.pending_txn: dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]] = {}
        self.loaded = False

    def _future(self) -> asyncio.Future[JoinResult]:
        return (self._loop or asyncio.get_running_loop()).create_future()

    def _sync_future(self) -> asyncio.Future[SyncResult]:
        return (self._loop or asyncio.get_running_loop()).create_future()

    # ---- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Replay `__consumer_offsets`: the latest record per key wins, a tombstone removes it.

        Groups come back as Kafka's coordinator loads them: Stable with the members, leader and
        assignments of their last stored generation, or Empty. `start()` then gives every member a
        fresh session, so a client that reconnects within its session timeout carries on.
        """
        self.store.ensure_topic()
        group_values: dict[str, GroupValue] = {}
        for key, value in self._latest_records().items():
            try:
                if isinstance(key, OffsetKey):
                    self.offsets.replay(key, None if value is None else OffsetValue.decode(value))
                elif value is None:
                    group_values.pop(key.group, None)
                else:
                    group_values[key.group] = GroupValue.decode(value)
            except RecordFormatError as exc:
                log.warning("skipping unreadable %s record %s: %s", OFFSETS_TOPIC, key, exc)
        for group_id, gv in group_values.items():
            self.groups[group_id] = _group_from_record(group_id, gv)
        for group_id in self.offsets.by_group:
            self.groups.setdefault(group_id, Group(group_id))
        for group_id in {g for by_group in self.pending_txn.values() for g in by_group}:
            self.groups.setdefault(group_id, Group(group_id))
        self.loaded = True
        members = sum(len(g.members) for g in self.groups.values())
        log.info(
            "loaded %d groups (%d members) and %d committed offsets",
            len(self.groups),
            members,
            sum(len(c) for c in self.offsets.by_group.values()),
        )

    def _latest_records(self) -> dict[OffsetKey | GroupKey, bytes | None]:
        """The latest value (None: a tombstone) of every key in `__consumer_offsets`.

        Earlier ebb-broker versions placed groups whose Java hashCode is negative in another partition
        than Kafka does (they masked the sign bit instead of Kafka's Math.abs). Such records are older
        than any in the group's proper partition, so those win; a misplaced value is copied to the
        proper partition when nothing newer is there, and gets a tombstone where it was, so compaction
        removes it and it can never come back once the proper partition's tombstones are cleaned.
        """
        placed: dict[OffsetKey | GroupKey, bytes | None] = {}
        misplaced: dict[OffsetKey | GroupKey, tuple[int, bytes, bytes]] = {}
        # producer id -> partition -> offset records of its open transaction (TxnOffsetCommit), in order
        open_txns: dict[int, dict[int, dict[OffsetKey, bytes | None]]] = {}
        for rec in self.store.replay():
            partition, key_bytes, value = rec.partition, rec.key, rec.value
            if rec.marker is not None:
                # The transaction coordinator's marker: its offsets become committed now, or never.
                done = open_txns.get(rec.producer_id, {}).pop(partition, {})
                if rec.marker == COMMIT_MARKER:
                    for offset_key, offset_value in done.items():
                        placed[offset_key] = offset_value
                continue
            try:
                key = decode_key(key_bytes)
            except RecordFormatError as exc:
                log.warning("skipping unreadable %s key in partition %d: %s", OFFSETS_TOPIC, partition, exc)
                continue
            if key is None:
                continue
            if rec.transactional:
                if isinstance(key, OffsetKey):
                    open_txns.setdefault(rec.producer_id, {}).setdefault(partition, {})[key] = value
                continue
            if value is None and isinstance(key, OffsetKey):
                # As Kafka's OffsetMetadataManager.replay: a tombstone also removes the key's pending
                # transactional offsets (a deleted topic's offsets do not come back with a COMMIT marker).
                for by_partition in open_txns.values():
                    by_partition.get(partition, {}).pop(key, None)
            if partition == self.store.partition_for(key.group):
                placed[key] = value
            elif value is not None:
                misplaced[key] = (partition, key_bytes, value)
            else:
                misplaced.pop(key, None)
        for key, (partition, key_bytes, value) in misplaced.items():
            if key not in placed:
                self.store.append(key.group, [(key_bytes, value)])
                placed[key] = value
            self.store.append_to(partition, [(key_bytes, None)])
        if misplaced:
            log.info(
                "moved %d records to the %s partitions Kafka assigns their groups",
                len(misplaced),
                OFFSETS_TOPIC,
            )
        for pid, by_partition in open_txns.items():
            for records in by_partition.values():
                for key, value in records.items():
                    if value is None:
                        continue
                    try:
                        v = OffsetValue.decode(value)
                    except RecordFormatError as exc:
                        log.warning("skipping unreadable transactional offset %s: %s", key, exc)
                        continue
                    committed = CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)
                    group = self.pending_txn.setdefault(pid, {}).setdefault(key.group, {})
                    group[(key.topic, key.partition)] = committed
        return placed

    def start(self) -> None:
        """Start the loaded members' sessions and the periodic offsets retention check."""
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        self.timer.schedule(
            _RETENTION_KEY, self.config.offsets_retention_check_interval_ms, self.cleanup_group_metadata
        )

    # ---- KIP-68 input ----------------------------------------------------------------------

    def committed_snapshot(self, groups: Iterable[str]) -> CommittedOffsets:
        """The committed offsets of `groups`, frozen for the retention pass (which runs off the event
        loop); unknown until __consumer_offsets is loaded. Call it on the event loop, which owns this
        state."""
        if not self.loaded:
            return CommittedOffsets(known=False)
        return self.offsets.committed_snapshot(groups)

    # ---- JoinGroup -------------------------------------------------------------------------

    def join(
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
        supports_skip_assignment: bool = False,
        reason: str | None = None,
    ) -> asyncio.Future[JoinResult]:
        """A JoinGroup; the future completes when the rebalance does (or at once with an error)."""
        future = self._future()
        if not group_id:
            future.set_result(JoinResult(E.InvalidGroupIdError.errno, member_id=member_id))
            return future
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            future.set_result(JoinResult(E.InvalidSessionTimeoutError.errno, member_id=member_id))
            return future
        request = _JoinRequest(
            member_id,
            group_instance_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocol_type,
            protocols,
            require_known_member_id,
            supports_skip_assignment,
            reason or "not provided",
        )
        group = self.groups.get(group_id)
        is_new_group = group is None
        if group is None:
            if member_id:
                # A member id for a group this coordinator does not know: the client must start over.
                future.set_result(JoinResult(E.UnknownMemberIdError.errno, member_id=member_id))
                return future
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.timer.now_ms())
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            future.set_result(JoinResult(E.GroupMaxSizeReachedError.errno))
        elif not member_id:
            self._join_new_member(group, request, future)
        else:
            self._join_existing_member(group, request, future)
        if is_new_group and group.is_in(GroupState.EMPTY):
            # Kafka records a group created by JoinGroup at once (an empty GroupMetadataValue).
            self._store_group(group, empty=True)
        return future

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        """group.max.size: existing members are always accepted, new ones up to the limit."""
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return (member is not None and member.awaiting_join) or (
                group.num_awaiting_join() < self.config.max_size
            )
        return member is not None or len(group.members) < self.config.max_size

    def _join_new_member(self, group: Group, req: _JoinRequest, future: asyncio.Future[JoinResult]) -> None:
        if group.is_in(GroupState.DEAD):
            future.set_result(JoinResult(E.CoordinatorNotAvailableError.errno))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            future.set_result(JoinResult(E.InconsistentGroupProtocolError.errno))
            return
        new_id = f"{req.group_instance_id or req.client_id}-{uuid.uuid4()}"
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is not None:
                log.info(
                    "group %s: static member %s rejoins in %s; member %s replaces %s",
                    group.group_id,
                    req.group_instance_id,
                    group.state.value,
                    new_id,
                    existing,
                )
                self._update_static_member(group, existing, new_id, req, future)
            else:
                self._add_member(group, new_id, req, future)
        elif req.require_known_member_id:
            # KIP-394: hand out the id and make the client rejoin with it; the id expires with the session.
            group.pending_join_members.add(new_id)
            self.timer.schedule(
                _heartbeat_key(group.group_id, new_id),
                req.session_timeout_ms,
                lambda: self._expire_heartbeat(group.group_id, new_id),
            )
            future.set_result(JoinResult(E.MemberIdRequiredError.errno, member_id=new_id))
        else:
            self._add_member(group, new_id, req, future)

    def _join_existing_member(
        self, group: Group, req: _JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        member_id = req.member_id
        if group.is_in(GroupState.DEAD):
            future.set_result(JoinResult(E.CoordinatorNotAvailableError.errno, member_id=member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            future.set_result(JoinResult(E.InconsistentGroupProtocolError.errno, member_id=member_id))
            return
        if member_id in group.pending_join_members:
            if req.group_instance_id is not None:
                # Kafka fails this request (a pending member id is never a static member's).
                future.set_result(JoinResult(E.UnknownError.errno, member_id=member_id))
                return
            self._add_member(group, member_id, req, future)
            return
        error = group.validate_member(member_id, req.group_instance_id)
        if error:
            future.set_result(JoinResult(error, member_id=member_id))
            return
        member = group.members[member_id]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member(group, member, req, future, f"member {member_id} joining during rebalance")
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # The member missed its JoinGroup response: hand it the current generation again.
                future.set_result(self._current_generation(group, member_id, with_members=True))
            else:
                self._update_member(group, member, req, future, f"member {member_id} changed its metadata")
        elif group.is_in(GroupState.STABLE):
            if member_id == group.leader or not member.matches(req.protocols):
                # The leader rejoining forces a rebalance (it saw a metadata change the others did not).
                self._update_member(group, member, req, future, f"member {member_id} rejoined")
            else:
                future.set_result(self._current_generation(group, member_id, with_members=False))
        else:
            log.warning(
                "group %s: member %s rejoins an %s group", group.group_id, member_id, group.state.value
            )
            future.set_result(JoinResult(E.UnknownMemberIdError.errno, member_id=member_id))

    @staticmethod
    def _current_generation(group: Group, member_id: str, *, with_members: bool) -> JoinResult:
        return JoinResult(
            0,
            group.generation,
            group.protocol_type,
            group.protocol,
            group.leader or "",
            member_id,
            group.current_member_metadata() if with_members and member_id == group.leader else [],
        )

    def _add_member(
        self, group: Group, member_id: str, req: _JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            is_new=True,
            join_waiters=[future],
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True  # extends the initial rebalance delay
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup is parked; give it the new-member timeout so
        # a client that vanished mid-join does not stay in the group forever (Kafka does the same).
        self._reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"adding member {member_id} (instance {req.group_instance_id}); reason: {req.reason}"
        )

    def _update_member(
        self,
        group: Group,
        member: Member,
        req: _JoinRequest,
        future: asyncio.Future[JoinResult],
        reason: str,
    ) -> None:
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_waiters.append(future)
        self._maybe_prepare_rebalance_or_complete_join(group, f"{reason}; reason: {req.reason}")

    def _update_static_member(
        self,
        group: Group,
        old_member_id: str,
        new_member_id: str,
        req: _JoinRequest,
        future: asyncio.Future[JoinResult],
    ) -> None:
        """KIP-345: a known static member rejoins with a new member id (its client restarted)."""
        assert req.group_instance_id is not None
        current_leader = group.leader
        new = group.replace_static_member(req.group_instance_id, old_member_id, new_member_id)
        self.timer.cancel(_heartbeat_key(group.group_id, old_member_id))
        self._reschedule_heartbeat(group, new)
        old_protocols = new.protocols
        old_timeouts = (new.rebalance_timeout_ms, new.session_timeout_ms)
        new.protocols = req.protocols
        new.rebalance_timeout_ms = req.rebalance_timeout_ms
        new.session_timeout_ms = req.session_timeout_ms
        if group.is_in(GroupState.STABLE):
            if group.select_protocol() != group.protocol:
                new.join_waiters.append(future)
                self._maybe_prepare_rebalance_or_complete_join(
                    group, f"static member {req.group_instance_id} rejoined with a change of protocol"
                )
                return
            # The assignment does not change: persist the new member id and answer without a rebalance.
            try:
                self._store_group(group)
            except Exception as exc:
                log.warning(
                    "group %s: could not store static member %s: %s", group.group_id, new_member_id, exc
                )
                new.protocols = old_protocols
                new.rebalance_timeout_ms, new.session_timeout_ms = old_timeouts
                old = group.replace_static_member(req.group_instance_id, new_member_id, old_member_id)
                self.timer.cancel(_heartbeat_key(group.group_id, new_member_id))
                self._reschedule_heartbeat(group, old)
                future.set_result(
                    JoinResult(
                        E.CoordinatorNotAvailableError.errno,
                        group.generation,
                        group.protocol_type,
                        group.protocol,
                        current_leader or "",
                    )
                )
                return
            if req.supports_skip_assignment:
                # JoinGroup v9+: a restarted leader learns it leads but skips the assignor (KIP-814).
                is_leader = group.leader == new_member_id
                future.set_result(
                    JoinResult(
                        0,
                        group.generation,
                        group.protocol_type,
                        group.protocol,
                        group.leader or "",
                        new_member_id,
                        group.current_member_metadata() if is_leader else [],
                        skip_assignment=is_leader,
                    )
                )
            else:
                # Before v9 the old leader id is returned, so the restarted member never runs an
                # assignment a Stable group would ignore.
                future.set_result(
                    JoinResult(
                        0,
                        group.generation,
                        group.protocol_type,
                        group.protocol,
                        current_leader or "",
                        new_member_id,
                    )
                )
            return
        new.join_waiters.append(future)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: start over.
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined during a sync")
        else:
            self._maybe_complete_join_phase(group)

    # ---- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: Group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.RebalanceInProgressError.errno)
        self._remove_sync_expiration(group)
        initial = group.is_in(GroupState.EMPTY)
        if initial:
            # A new group: give the other members a moment to arrive (InitialDelayedJoin).
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(group.group_id, delay, remaining)
        group.transition_to(GroupState.PREPARING_REBALANCE, self.timer.now_ms())
        log.info(
            "group %s: preparing to rebalance from generation %d (%s)",
            group.group_id,
            group.generation,
            reason,
        )
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self.timer.schedule(
                    _join_key(group.group_id),
                    group.rebalance_timeout_ms(),
                    lambda: self._complete_join_by_id(group.group_id),
                )

    def _schedule_initial_join(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        self.timer.schedule(
            _join_key(group_id),
            delay_ms,
            lambda: self._try_complete_initial_rebalance(group_id, delay_ms, remaining_ms),
        )

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            # Someone joined during the delay: wait again, within the rebalance timeout.
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            self._schedule_initial_join(group_id, new_delay, max(remaining_ms - delay_ms, 0))
        else:
            self._complete_join(group)

    def _maybe_complete_join_phase(self, group: Group) -> None:
        """Complete the join phase early once everyone rejoined, except during the initial delay."""
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and group.previous_state is not GroupState.EMPTY
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        self.timer.cancel(_join_key(group.group_id))
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        gone = [m for m in group.not_yet_rejoined() if not m.is_static]
        for m in gone:
            group.remove(m.member_id)
            self.timer.cancel(_heartbeat_key(group.group_id, m.member_id))
        if gone:
            log.info(
                "group %s: removed members that did not rejoin in time: %s",
                group.group_id,
                [m.member_id for m in gone],
            )
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that did not rejoin are left: wait for them (or their sessions).
            log.warning("group %s: no member rejoined; waiting another rebalance timeout", group.group_id)
            self.timer.schedule(
                _join_key(group.group_id),
                group.rebalance_timeout_ms(),
                lambda: self._complete_join_by_id(group.group_id),
            )
            return
        group.init_next_generation(self.timer.now_ms())
        if group.is_in(GroupState.EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._store_group(group)
            return
        log.info(
            "group %s: generation %d with %d members, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.leader,
        )
        for m in list(group.members.values()):
            m.complete_join(self._current_generation(group, m.member_id, with_members=True))
            self._reschedule_heartbeat(group, m)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        group_id, generation = group.group_id, group.generation
        self.timer.schedule(
            _sync_key(group_id),
            group.rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(group_id, generation),
        )

    def _remove_sync_expiration(self, group: Group) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(_sync_key(group.group_id))

    def _expire_pending_sync(self, group_id: str, generation: int) -> None:
        """Members that got the JoinGroup answer but never sent SyncGroup within the rebalance timeout."""
        group = self.groups.get(group_id)
        if group is None or generation != group.generation:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.pending_sync_members:
            pending = sorted(group.pending_sync_members)
            for member_id in pending:
                group.remove(member_id)
                self.timer.cancel(_heartbeat_key(group_id, member_id))
            self._prepare_rebalance(group, f"members {pending} sent no SyncGroup in time")

    def _reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == 0
        for m in group.members.values():
            result = SyncResult(
                error, group.protocol_type if ok else None, group.protocol if ok else None, m.assignment
            )
            if m.complete_sync(result):
                self._reschedule_heartbeat(group, m)

    # ---- SyncGroup -------------------------------------------------------------------------

    def sync(
        self,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: dict[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> asyncio.Future[SyncResult]:
        future = self._sync_future()
        group = self.groups.get(group_id)
        if not group_id:
            future.set_result(SyncResult(E.InvalidGroupIdError.errno))
            return future
        if group is None or group.is_in(GroupState.EMPTY):
            future.set_result(SyncResult(E.UnknownMemberIdError.errno))
            return future
        error = self._validate_sync(
            group, generation, member_id, group_instance_id, protocol_type, protocol_name
        )
        if error:
            if error == E.IllegalGenerationError.errno:
                log.info(
                    "group %s: SyncGroup from %s for generation %d (now %d)",
                    group_id,
                    member_id,
                    generation,
                    group.generation,
                )
            future.set_result(SyncResult(error))
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            future.set_result(SyncResult(E.RebalanceInProgressError.errno))
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            member = group.members[member_id]
            member.sync_waiters.append(future)
            group.pending_sync_members.discard(member_id)
            if member_id == group.leader:
                self._complete_sync(group, generation, assignments)
        else:  # Stable: hand out the current assignment
            group.pending_sync_members.discard(member_id)
            member = group.members[member_id]
            future.set_result(SyncResult(0, group.protocol_type, group.protocol, member.assignment))
            self._reschedule_heartbeat(group, member)
        return future

    @staticmethod
    def _validate_sync(
        group: Group,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> int:
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        error = group.validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation != group.generation:
            return int(E.IllegalGenerationError.errno)
        if protocol_type is not None and protocol_type != group.protocol_type:
            return int(E.InconsistentGroupProtocolError.errno)
        if protocol_name is not None and protocol_name != group.protocol:
            return int(E.InconsistentGroupProtocolError.errno)
        return 0

    def _complete_sync(self, group: Group, generation: int, assignments: dict[str, bytes]) -> None:
        """The leader's assignment: store it, then answer every member waiting in SyncGroup."""
        assignment = {m: assignments.get(m, b"") for m in group.members}
        missing = [m for m in group.members if m not in assignments]
        if missing:
            log.warning("group %s: empty assignment for members %s", group.group_id, missing)
        try:
            self._store_group(group, assignment)
        except Exception as exc:
            log.warning("group %s: could not store the assignment: %s", group.group_id, exc)
            if group.is_in(GroupState.COMPLETING_REBALANCE) and generation == group.generation:
                self._reset_and_propagate_assignment_error(group, E.CoordinatorNotAvailableError.errno)
                self._maybe_prepare_rebalance_or_complete_join(group, "storing the assignment failed")
            return
        for m in group.members.values():
            m.assignment = assignment[m.member_id]
        self._propagate_assignment(group, 0)
        group.transition_to(GroupState.STABLE, self.timer.now_ms())
        log.info(
            "group %s: generation %d stable with %d members (%d static)",
            group.group_id,
            group.generation,
            len(group.members),
            len(group.static_members),
        )

    # ---- Heartbeat, LeaveGroup, sessions ---------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str, group_instance_id: str | None) -> int:
        if not group_id:
            return int(E.InvalidGroupIdError.errno)
        group = self.groups.get(group_id)
        if group is None:
            return int(E.UnknownMemberIdError.errno)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        error = group.validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation != group.generation:
            return int(E.IllegalGenerationError.errno)
        if group.is_in(GroupState.EMPTY):
            return int(E.UnknownMemberIdError.errno)
        self._reschedule_heartbeat(group, group.members[member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return int(E.RebalanceInProgressError.errno)
        return 0

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """LeaveGroup for (member id, group instance id) pairs: the top-level error and one per member.

        A member id of "" with an instance id removes that static member (KIP-345's admin removal).
        """
        if not group_id:
            return int(E.InvalidGroupIdError.errno), []
        group = self.groups.get(group_id)
        if group is None:
            return 0, [int(E.UnknownMemberIdError.errno)] * len(members)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno), []
        errors: list[int] = []
        for member_id, instance_id in members:
            if not member_id:
                current = group.static_members.get(instance_id) if instance_id is not None else None
                if current is None:
                    errors.append(int(E.UnknownMemberIdError.errno))
                    continue
                self._remove_current_member(group, current)
                errors.append(0)
            elif member_id in group.pending_join_members:
                group.remove(member_id)
                self.timer.cancel(_heartbeat_key(group_id, member_id))
                errors.append(0)
            else:
                error = group.validate_member(member_id, instance_id)
                if not error:
                    self._remove_current_member(group, member_id)
                errors.append(error)
        if any(e == 0 for e in errors):
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, "members left")
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)
        return 0, errors

    def _remove_current_member(self, group: Group, member_id: str) -> None:
        log.info("group %s: member %s left", group.group_id, member_id)
        self.timer.cancel(_heartbeat_key(group.group_id, member_id))
        group.remove(member_id)

    def _reschedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(
            _heartbeat_key(group_id, member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self._expire_heartbeat(group_id, member_id),
        )

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if member_id in group.pending_join_members:
            log.info("group %s: pending member %s expired", group_id, member_id)
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group %s: member %s session expired", group_id, member_id)
        group.remove(member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, f"member {member_id} session expired")
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    # ---- persistence -----------------------------------------------------------------------

    def _store_group(
        self, group: Group, assignment: dict[str, bytes] | None = None, *, empty: bool = False
    ) -> None:
        """Write the group's GroupMetadataValue (Kafka writes it at every stable point)."""
        assignment = group.assignment() if assignment is None else assignment
        value = GroupValue(
            protocol_type=group.protocol_type or "",
            generation=0 if empty else group.generation,
            protocol=None if empty else group.protocol,
            leader=None if empty else group.leader,
            current_state_timestamp=group.state_timestamp if group.state_timestamp is not None else -1,
            members=[]
            if empty
            else [
                MemberRecord(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(group.protocol),
                    assignment.get(m.member_id, b""),
                )
                for m in group.members.values()
            ],
        )
        self.store.append(group.group_id, [(GroupKey(group.group_id).encode(), value.encode())])

    # ---- offsets ---------------------------------------------------------------------------

    def validate_commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int = 9,
    ) -> int:
        """Who may commit for the group right now (Kafka's validateOffsetCommit); 0 if allowed.

        Generation -1 from nobody commits for an Empty or unknown group (admin tools, standalone
        consumers); otherwise the member and generation must be current, and a commit during
        CompletingRebalance gets REBALANCE_IN_PROGRESS. A member's commit keeps its session alive.
        """
        group = self.groups.get(group_id)
        if group is None:
            if generation < 0:
                log.info("group %s: created by a standalone offset commit", group_id)
                self.groups[group_id] = Group(group_id, state_timestamp=self.timer.now_ms())
                return 0
            return int(E.GroupIdNotFoundError.errno if api_version >= 9 else E.IllegalGenerationError.errno)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return 0
        if generation >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation != group.generation:
                return int(E.IllegalGenerationError.errno)
        elif not group.is_in(GroupState.EMPTY):
            return int(E.UnknownMemberIdError.errno)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return int(E.RebalanceInProgressError.errno)
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._reschedule_heartbeat(group, group.members[member_id])
        return 0

    def commit(self, group_id: str, commits: dict[tuple[str, int], CommittedOffset]) -> None:
        """Write the commits to `__consumer_offsets`, then make them visible."""
        self.store.append(group_id, [commit_record(group_id, tp, c) for tp, c in commits.items()])
        self.offsets.commit(group_id, commits)
        self.groups.setdefault(group_id, Group(group_id, state_timestamp=self.timer.now_ms()))

    def fetch(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.offsets.fetch(group_id)

    # ---- transactional offsets (KIP-98, KIP-447) -------------------------------------------

    def validate_txn_commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's validateOffsetCommit for TxnOffsetCommit: a member's generation is checked when given
        (KIP-447); without one (generation -1, older producers) any group accepts it."""
        group = self.groups.get(group_id)
        if group is None:
            if generation < 0:
                self.groups[group_id] = Group(group_id, state_timestamp=self.timer.now_ms())
                return 0
            return int(E.IllegalGenerationError.errno)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return 0
        if generation >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation != group.generation:
                return int(E.IllegalGenerationError.errno)
        return 0

    def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        commits: dict[tuple[str, int], CommittedOffset],
    ) -> None:
        """Write the offsets as part of the producer's transaction; they stay pending until its marker."""
        records = [commit_record(group_id, tp, c) for tp, c in commits.items()]
        self.store.append_transactional(group_id, producer_id, producer_epoch, records, self.timer.now_ms())
        self.pending_txn.setdefault(producer_id, {}).setdefault(group_id, {}).update(commits)
        self.groups.setdefault(group_id, Group(group_id, state_timestamp=self.timer.now_ms()))

    def complete_txn_offsets(self, producer_id: int, partition: int, *, commit: bool) -> None:
        """The transaction coordinator wrote the producer's marker to `__consumer_offsets` partition
        ``partition``: the pending offsets of the groups there become committed, or are dropped."""
        by_group = self.pending_txn.get(producer_id, {})
        for group_id in [g for g in by_group if self.store.partition_for(g) == partition]:
            offsets = by_group.pop(group_id)
            if commit:
                self.offsets.commit(group_id, offsets)
                self.groups.setdefault(group_id, Group(group_id, state_timestamp=self.timer.now_ms()))
        if not by_group:
            self.pending_txn.pop(producer_id, None)

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int] | None = None) -> bool:
        """Whether an open transaction holds an offset of the group (of ``tp``): OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT then (KIP-447)."""
        return any(
            group_id in by_group and (tp is None or tp in by_group[group_id])
            for by_group in self.pending_txn.values()
        )

    def list_groups(self) -> list[Group]:
        return [g for g in self.groups.values() if not g.is_in(GroupState.DEAD)]

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups: only an Empty group; tombstones for its offsets and its metadata."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return int(E.GroupIdNotFoundError.errno)
        if not group.is_in(GroupState.EMPTY):
            return int(E.NonEmptyGroupError.errno)
        records = self.offsets.remove_all(group_id)
        self._delete(group, records)
        return 0

    def _delete(self, group: Group, records: list[Record]) -> None:
        records.append((GroupKey(group.group_id).encode(), None))
        self.store.append(group.group_id, records)
        group.transition_to(GroupState.DEAD, self.timer.now_ms())
        for member_id in list(group.pending_join_members):
            self.timer.cancel(_heartbeat_key(group.group_id, member_id))
        del self.groups[group.group_id]

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete (KIP-496): (group error, per-partition errors); topics the group consumes stay."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return int(E.GroupIdNotFoundError.errno), {}
        if not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
            return int(E.NonEmptyGroupError.errno), {}
        result: dict[tuple[str, int], int] = {}
        removable: list[tuple[str, int]] = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp[0]):
                result[tp] = int(E.GroupSubscribedToTopicError.errno)
            else:
                result[tp] = 0
                removable.append(tp)
        records = self.offsets.remove(group_id, removable)
        if records:
            self.store.append(group_id, records)
        return 0, result

    def on_topic_deleted(self, topic: str) -> int:
        """DeleteTopics deleted ``topic``: every group's commits of its partitions get tombstones, and
        pending transactional ones are dropped, so a topic re-created with that name starts with no
        committed offset (Kafka's onPartitionsDeleted; GroupMetadataManager.cleanupGroupMetadata before
        4.0). A group left Empty with no offsets goes at the next offsets retention check, as in Kafka.
        Returns how many commits were removed."""
        doomed: dict[str, set[tuple[str, int]]] = {}
        for group_id, committed in self.offsets.by_group.items():
            doomed.setdefault(group_id, set()).update(tp for tp in committed if tp[0] == topic)
        for by_group in self.pending_txn.values():
            for group_id, pending in list(by_group.items()):
                tps = {tp for tp in pending if tp[0] == topic}
                doomed.setdefault(group_id, set()).update(tps)
                for tp in tps:
                    del pending[tp]
                if not pending:
                    del by_group[group_id]
        removed = 0
        for group_id, tps in doomed.items():
            if not tps:
                continue
            # A tombstone for a pending offset too, as Kafka writes: its transaction's marker, replayed
            # after it, then finds nothing to make visible.
            removed += len(self.offsets.remove(group_id, tps))
            self.store.append(group_id, [tombstone(group_id, tp) for tp in sorted(tps)])
        return removed

    def cleanup_group_metadata(self) -> None:
        """KIP-211: expire offsets past `offsets.retention.minutes`; delete Empty groups left with none.

        Runs every `offsets.retention.check.interval.ms`. A group's expired offsets and, when nothing is
        left and it is Empty, its metadata get tombstones in `__consumer_offsets`.
        """
        try:
            now = self.timer.now_ms()
            expired_offsets = deleted_groups = 0
            for group in list(self.groups.values()):
                # An offset with a transactional commit pending does not expire, nor does its group go.
                pending = {
                    tp for by_group in self.pending_txn.values() for tp in by_group.get(group.group_id, {})
                }
                records, all_expired = self.offsets.expire(
                    group, now, self.config.offsets_retention_ms, keep=pending
                )
                expired_offsets += len(records)
                if all_expired and not pending and group.is_in(GroupState.EMPTY):
                    self._delete(group, records)
                    deleted_groups += 1
                elif records:
                    self.store.append(group.group_id, records)
            if expired_offsets or deleted_groups:
                log.info(
                    "offsets retention: expired %d offsets, deleted %d empty groups",
                    expired_offsets,
                    deleted_groups,
                )
        finally:
            self.timer.schedule(
                _RETENTION_KEY, self.config.offsets_retention_check_interval_ms, self.cleanup_group_metadata
            )


@dataclass(frozen=True)
class _JoinRequest:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    require_known_member_id: bool
    supports_skip_assignment: bool
    reason: str


def _group_from_record(group_id: str, gv: GroupValue) -> Group:
    """A group as its last GroupMetadataValue left it: Stable with its members, or Empty."""
    group = Group(
        group_id,
        GroupState.STABLE if gv.members else GroupState.EMPTY,
        generation=gv.generation,
        protocol_type=gv.protocol_type or None,
        protocol=gv.protocol,
        state_timestamp=None if gv.current_state_timestamp < 0 else gv.current_state_timestamp,
    )
    for m in gv.members:
        group.add(
            Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout,
                m.session_timeout,
                gv.protocol_type,
                [(gv.protocol or "", m.subscription)],
                m.assignment,
            )
        )
    if gv.leader in group.members:
        group.leader = gv.leader
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
