"""One classic consumer group: its members, generation and state (Kafka's ClassicGroup).

States and transitions are Kafka's (`ClassicGroupState`): Empty -> PreparingRebalance (a member joins)
-> CompletingRebalance (every member rejoined, or the rebalance timeout passed) -> Stable (the leader's
SyncGroup) -> PreparingRebalance (a join, a leave or a session expiry) ... -> Empty (the last member
left) -> Dead (DeleteGroups, or its offsets expired). A transition from a state not listed as its valid
previous state is a programming error and raises, as Kafka's `assertValidTransition` does.

Static members (KIP-345) are kept in `static_members` (group.instance.id -> member id); a restarted
static member takes over its old entry, assignment included (`replace_static_member`).
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field

from kafka.errors import FencedInstanceIdError, IllegalGenerationError, UnknownMemberIdError

from ebb_formats.consumer_protocol import CONSUMER_PROTOCOL_TYPE, SubscriptionFormatError, subscribed_topics


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransitionError(RuntimeError):
    """A state change Kafka's classic group never makes (a coordinator bug, not a client error)."""


@dataclass
class JoinResult:
    """What a JoinGroup request is answered with."""

    error: int
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # the leader's view only
    skip_assignment: bool = False


@dataclass
class SyncResult:
    """What a SyncGroup request is answered with."""

    error: int
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # A member is "new" from its first JoinGroup until that join completes: its session is then the
    # new-member join timeout, and waiting in JoinGroup does not keep it alive (Kafka's isNew).
    is_new: bool = False
    # Requests parked in JoinGroup / SyncGroup. A client that retries on a new connection while its
    # first request is parked gets the same outcome on both.
    join_waiters: list[asyncio.Future[JoinResult]] = field(default_factory=list)
    sync_waiters: list[asyncio.Future[SyncResult]] = field(default_factory=list)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return any(not w.done() for w in self.join_waiters)

    @property
    def awaiting_sync(self) -> bool:
        return any(not w.done() for w in self.sync_waiters)

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session deadline passing now keeps the member: it is parked in a rebalance."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str | None:
        """The member's most preferred protocol among the candidates."""
        return next((name for name, _ in self.protocols if name in candidates), None)

    def complete_join(self, result: JoinResult) -> bool:
        """Answer every parked JoinGroup of this member; False if none was parked."""
        waiters, self.join_waiters = self.join_waiters, []
        return _answer(waiters, result)

    def complete_sync(self, result: SyncResult) -> bool:
        """Answer every parked SyncGroup of this member; False if none was parked."""
        waiters, self.sync_waiters = self.sync_waiters, []
        return _answer(waiters, result)


def _answer(
    waiters: list[asyncio.Future[JoinResult]] | list[asyncio.Future[SyncResult]], result: object
) -> bool:
    answered = False
    for w in waiters:
        if not w.done():
            w.set_result(result)  # type: ignore[arg-type]
            answered = True
    return answered


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # join order, as Kafka's LinkedHashMap
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_join_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED (KIP-394)
    pending_sync_members: set[str] = field(default_factory=set)  # joined, SyncGroup not yet received
    new_member_added: bool = False  # extends the initial rebalance delay
    state_timestamp: int | None = None  # wall-clock ms of the last transition (offset expiry, KIP-211)
    subscribed_topics: set[str] | None = None  # None: unknown (not a consumer group or unparsable)

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalGroupTransitionError(
                f"group {self.group_id}: {state.value} cannot follow {self.state.value}"
            )
        self.previous_state = self.state
        self.state = state
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # ---- members -----------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.member_id
        self.members[member.member_id] = member
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        """Drop a member; a request it still has parked is answered UNKNOWN_MEMBER_ID (so it rejoins)."""
        member = self.members.pop(member_id, None)
        if member is not None:
            member.complete_join(JoinResult(UnknownMemberIdError.errno))
            member.complete_sync(SyncResult(UnknownMemberIdError.errno))
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """A restarted static member takes the old entry's place and assignment; the old id is fenced."""
        old = self.members.pop(old_member_id)
        old.complete_join(JoinResult(FencedInstanceIdError.errno, member_id=old_member_id))
        old.complete_sync(SyncResult(FencedInstanceIdError.errno))
        new = Member(
            new_member_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        self.members[new_member_id] = new
        if self.leader == old_member_id:
            self.leader = new_member_id
        self.static_members[instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return new

    def validate_member(
        self, member_id: str, group_instance_id: str | None, generation: int | None = None
    ) -> int:
        """Kafka's validateMember: 0, FENCED_INSTANCE_ID (a static member's stale id), UNKNOWN_MEMBER_ID;
        with `generation`, then ILLEGAL_GENERATION when it is not the group's (heartbeat, sync, commits)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return int(UnknownMemberIdError.errno)
            if current != member_id:
                return int(FencedInstanceIdError.errno)
        if member_id not in self.members:
            return int(UnknownMemberIdError.errno)
        if generation is not None and generation != self.generation:
            return int(IllegalGenerationError.errno)
        return 0

    def has_all_members_joined(self) -> bool:
        return all(m.awaiting_join for m in self.members.values()) and not self.pending_join_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else elect a member that did; False if none did."""
        if self.leader is None:
            return False
        if self.members[self.leader].awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader = joined.member_id
        return True

    # ---- protocols ---------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports (Kafka's candidateProtocols)."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its most preferred candidate; most votes wins."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda k: votes[k]) if votes else None

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """(member id, group instance id, metadata for the chosen protocol): the leader's JoinGroup view."""
        return [
            (m.member_id, m.group_instance_id, m.metadata_for(self.protocol)) for m in self.members.values()
        ]

    def assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    # ---- topics (offset deletion and expiry) -------------------------------------------------

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics of the consumer protocol subscriptions; None when unknown (Kafka's Optional.empty)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata_for(self.protocol))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics


def parse_subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a member's ConsumerProtocolSubscription; None when it is not one (Kafka's
    Optional.empty: the group's subscriptions are then unknown)."""
    try:
        return set(subscribed_topics(metadata))
    except SubscriptionFormatError:
        return None
