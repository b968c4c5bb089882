"""One classic consumer group: its members, generation and state (Kafka's GroupMetadata).

States and transitions follow Kafka's classic coordinator:
Empty -> PreparingRebalance (a member joins) -> CompletingRebalance (every known member rejoined or
the rebalance timeout passed) -> Stable (the leader's SyncGroup) -> PreparingRebalance (a join, a
leave or a session expiry) ... -> Empty (the last member left) -> Dead (DeleteGroups).
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field
from typing import Any


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class JoinResult:
    """What a JoinGroup waiter receives when the rebalance completes."""

    error: int
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # leader only


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    last_heartbeat: float = 0.0
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[tuple[int, bytes]] | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    @property
    def awaiting(self) -> bool:
        """Whether the member is parked in JoinGroup or SyncGroup (its session does not expire then)."""
        return any(w is not None and not w.done() for w in (self.join_waiter, self.sync_waiter))


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, float] = field(default_factory=dict)  # MEMBER_ID_REQUIRED, id -> deadline
    rebalance_deadline: asyncio.TimerHandle | None = None
    state_timestamp: int = -1

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports (Kafka's candidateProtocols)."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, protocols: list[tuple[str, Any]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its most preferred candidate; most votes wins."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            for name, _ in m.protocols:
                if name in candidates:
                    votes[name] = votes.get(name, 0) + 1
                    break
        return max(votes, key=lambda k: votes[k]) if votes else None

    def all_joined(self) -> bool:
        return all(m.join_waiter is not None and not m.join_waiter.done() for m in self.members.values())

    def subscribed_topics(self) -> set[str] | None:
        """Topics of the consumer protocol subscriptions, or None if they cannot be decoded."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return set() if not self.members else None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata_for(self.protocol))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (version int16, then an array of strings)."""
    try:
        pos = 2
        count = int.from_bytes(metadata[pos : pos + 4], "big", signed=True)
        pos += 4
        topics = set()
        for _ in range(max(count, 0)):
            n = int.from_bytes(metadata[pos : pos + 2], "big", signed=True)
            pos += 2
            topics.add(metadata[pos : pos + n].decode())
            pos += n
        return topics
    except (IndexError, UnicodeDecodeError):
        return None
