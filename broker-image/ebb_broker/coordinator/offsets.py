"""Committed offsets of every group (Kafka's OffsetMetadataManager, without the group checks).

The coordinator validates who may commit; this module keeps what was committed, decides which commits
have expired (KIP-211, `offsets.retention.minutes`) and builds the `__consumer_offsets` records for
commits and their tombstones. It also gives the log engine its KIP-68 input: the committed offsets of
the groups consumed retention counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ebb_broker.coordinator.group import Group, GroupState
from ebb_broker.coordinator.offsets_records import OffsetKey, OffsetValue
from ebb_broker.log import CommittedOffsets

TopicPartition = tuple[str, int]
Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def commit_record(group_id: str, tp: TopicPartition, c: CommittedOffset) -> Record:
    value = OffsetValue(c.offset, c.leader_epoch, c.metadata, c.commit_timestamp)
    return OffsetKey(group_id, tp[0], tp[1]).encode(), value.encode()


def tombstone(group_id: str, tp: TopicPartition) -> Record:
    return OffsetKey(group_id, tp[0], tp[1]).encode(), None


def _commit_time(c: CommittedOffset) -> int:
    return c.commit_timestamp


def expiration_base(group: Group) -> Callable[[CommittedOffset], int] | None:
    """Kafka's ClassicGroup.offsetExpirationCondition: what an offset's retention period counts from,
    or None when no offset of the group may expire now.

    - A group with a protocol type that is Empty: the time it became Empty (the commit time for a group
      record written without a state timestamp).
    - A Stable consumer group that knows its subscriptions: the commit time, for the topics it no longer
      subscribes to.
    - A standalone group (it only commits, nobody ever joined): the commit time.
    """
    if group.protocol_type:
        if group.state is GroupState.EMPTY:
            empty_since = group.state_timestamp
            return _commit_time if empty_since is None else (lambda _c: empty_since)
        if (
            group.uses_consumer_protocol()
            and group.subscribed_topics is not None
            and group.is_in(GroupState.STABLE)
        ):
            return _commit_time
        return None
    return _commit_time


class OffsetManager:
    """group id -> (topic, partition) -> the latest commit; owned by the event loop."""

    def __init__(self) -> None:
        self.by_group: dict[str, dict[TopicPartition, CommittedOffset]] = {}

    def replay(self, key: OffsetKey, value: OffsetValue | None) -> None:
        """One `__consumer_offsets` record read back on start; a tombstone removes the commit."""
        tp = (key.topic, key.partition)
        if value is None:
            committed = self.by_group.get(key.group)
            if committed is not None:
                committed.pop(tp, None)
                if not committed:
                    del self.by_group[key.group]
        else:
            c = CommittedOffset(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp)
            self.by_group.setdefault(key.group, {})[tp] = c

    def commit(self, group_id: str, commits: dict[TopicPartition, CommittedOffset]) -> None:
        self.by_group.setdefault(group_id, {}).update(commits)

    def fetch(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return self.by_group.get(group_id, {})

    def has(self, group_id: str, tp: TopicPartition) -> bool:
        return tp in self.by_group.get(group_id, {})

    def remove(self, group_id: str, tps: Iterable[TopicPartition]) -> list[Record]:
        """Forget the commits; the tombstones to write for them."""
        committed = self.by_group.get(group_id, {})
        records = [tombstone(group_id, tp) for tp in tps if committed.pop(tp, None) is not None]
        if not committed:
            self.by_group.pop(group_id, None)
        return records

    def remove_all(self, group_id: str) -> list[Record]:
        return self.remove(group_id, list(self.by_group.get(group_id, {})))

    def expire(
        self, group: Group, now_ms: int, retention_ms: int, *, keep: set[TopicPartition] | None = None
    ) -> tuple[list[Record], bool]:
        """Kafka's cleanupExpiredOffsets: tombstones for the expired commits of `group`, and whether
        nothing is left (the group may then be deleted if it is Empty)."""
        committed = self.by_group.get(group.group_id)
        if not committed:
            return [], True
        base = expiration_base(group)
        if base is None:
            return [], False
        expired = [
            tp
            for tp, c in committed.items()
            if not group.is_subscribed_to_topic(tp[0])
            and now_ms - base(c) >= retention_ms
            and not (keep and tp in keep)
        ]
        all_expired = len(expired) == len(committed)
        return self.remove(group.group_id, expired), all_expired

    def committed_snapshot(self, groups: Iterable[str]) -> CommittedOffsets:
        """The committed offsets of `groups` (the ones consumed retention counts; KIP-68 input)."""
        return CommittedOffsets(
            {g: {tp: c.offset for tp, c in self.by_group[g].items()} for g in groups if g in self.by_group}
        )
