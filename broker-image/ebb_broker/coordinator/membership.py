"""Classic group membership (Kafka's GroupMetadataManager, its classic-group half): JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, sessions and rebalances, and the GroupMetadataValue records they write.

It restates Kafka's classic group coordinator on one event loop, so no locks are needed:
- JoinGroup parks until every member rejoined or the rebalance timeout passes; a new group's first
  rebalance waits `group.initial.rebalance.delay.ms`, extended while members keep arriving, capped by
  the rebalance timeout (Kafka's InitialDelayedJoin), so consumers started together share a generation.
- KIP-394 MEMBER_ID_REQUIRED; KIP-345 static members: a static member that restarts takes its old
  place and assignment without a rebalance reaching the others, a stale member id is fenced
  (FENCED_INSTANCE_ID), and a static member that never returns is removed when its session expires.
- Sessions, rebalances and pending SyncGroups are keyed timers (`timer.CoordinatorTimer`), rescheduled
  the way Kafka's coordinator timer does.
- Group metadata is written to `__consumer_offsets` at every stable point, before it is acknowledged
  (`loading` reads it back on start).
The group's own states and transitions are `group.Group`'s. Error codes are Kafka's numbers from
kafka-python's error table.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Hashable
from dataclasses import dataclass

from kafka import errors as E

from ebb_broker.coordinator.group import Group, GroupState, JoinResult, Member, SyncResult
from ebb_broker.coordinator.group_config import GroupCoordinatorConfig
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.timer import CoordinatorTimer
from ebb_formats.consumer_offsets import GroupMetadataKey, GroupMetadataValue, MemberMetadata

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]


def heartbeat_key(group_id: str, member_id: str) -> Hashable:
    """The timer of a member's session (and of a pending member id's, KIP-394)."""
    return ("heartbeat", group_id, member_id)


def _join_key(group_id: str) -> Hashable:
    return ("join", group_id)


def _sync_key(group_id: str) -> Hashable:
    return ("sync", group_id)


class GroupMembership:
    """Every classic group of this broker and its members (the broker coordinates all of them)."""

    def __init__(
        self,
        store: OffsetsStore,
        timer: CoordinatorTimer,
        config: GroupCoordinatorConfig,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
    ):
        self.store = store
        self.timer = timer
        self.config = config
        self._loop = loop
        self.groups: dict[str, Group] = {}

    def _future(self) -> asyncio.Future[JoinResult]:
        return (self._loop or asyncio.get_running_loop()).create_future()

    def _sync_future(self) -> asyncio.Future[SyncResult]:
        return (self._loop or asyncio.get_running_loop()).create_future()

    def start(self) -> None:
        """Give every loaded member a fresh session: a client that reconnects within it carries on."""
        for group in self.groups.values():
            for member in group.members.values():
                self.reschedule_heartbeat(group, member)

    def ensure_group(self, group_id: str) -> Group:
        """The group, created Empty when a commit names one nobody joined (a standalone group)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.timer.now_ms())
        return group

    def list_groups(self) -> list[Group]:
        return [g for g in self.groups.values() if not g.is_in(GroupState.DEAD)]

    def delete(self, group: Group, offset_tombstones: list[Record]) -> None:
        """Remove the group (DeleteGroups, or its offsets expired): its offsets' tombstones and its own in
        one batch, then it is Dead and forgotten."""
        self.store.append(
            group.group_id, [*offset_tombstones, (GroupMetadataKey(group.group_id).encode(), None)]
        )
        group.transition_to(GroupState.DEAD, self.timer.now_ms())
        for member_id in list(group.pending_join_members):
            self.timer.cancel(heartbeat_key(group.group_id, member_id))
        del self.groups[group.group_id]

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
            self.store_group(group, empty=True)
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
                heartbeat_key(group.group_id, new_id),
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
        self.reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
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
        self.timer.cancel(heartbeat_key(group.group_id, old_member_id))
        self.reschedule_heartbeat(group, new)
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
                self.store_group(group)
            except Exception as exc:
                log.warning(
                    "group %s: could not store static member %s: %s", group.group_id, new_member_id, exc
                )
                new.protocols = old_protocols
                new.rebalance_timeout_ms, new.session_timeout_ms = old_timeouts
                old = group.replace_static_member(req.group_instance_id, new_member_id, old_member_id)
                self.timer.cancel(heartbeat_key(group.group_id, new_member_id))
                self.reschedule_heartbeat(group, old)
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
            self.timer.cancel(heartbeat_key(group.group_id, m.member_id))
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
            self.store_group(group)
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
            self.reschedule_heartbeat(group, m)
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
                self.timer.cancel(heartbeat_key(group_id, member_id))
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
                self.reschedule_heartbeat(group, m)

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
            self.reschedule_heartbeat(group, member)
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
        error = group.validate_member(member_id, group_instance_id, generation)
        if error:
            return error
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
            self.store_group(group, assignment)
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
        error = group.validate_member(member_id, group_instance_id, generation)
        if error:
            return error
        if group.is_in(GroupState.EMPTY):
            return int(E.UnknownMemberIdError.errno)
        self.reschedule_heartbeat(group, group.members[member_id])
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
                self.timer.cancel(heartbeat_key(group_id, member_id))
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
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        group.remove(member_id)

    def reschedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(
            heartbeat_key(group_id, member_id),
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

    def store_group(
        self, group: Group, assignment: dict[str, bytes] | None = None, *, empty: bool = False
    ) -> None:
        """Write the group's GroupMetadataValue (Kafka writes it at every stable point)."""
        assignment = group.assignment() if assignment is None else assignment
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=0 if empty else group.generation,
            protocol=None if empty else group.protocol,
            leader=None if empty else group.leader,
            current_state_timestamp=group.state_timestamp if group.state_timestamp is not None else -1,
            members=()
            if empty
            else tuple(
                MemberMetadata(
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
            ),
        )
        self.store.append(group.group_id, [(GroupMetadataKey(group.group_id).encode(), value.encode())])


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
