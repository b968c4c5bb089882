"""Offsets retention (KIP-211, Kafka's cleanupGroupMetadata): committed offsets expire after
`offsets.retention.minutes`, and an Empty group left without offsets is deleted.

The check runs every `offsets.retention.check.interval.ms` on the coordinator's timer. What an offset's
retention period counts from is Kafka's ClassicGroup.offsetExpirationCondition (`expiration_base`): the
time an Empty group became Empty, or the commit time for standalone commits and for the topics a Stable
consumer group no longer subscribes to. A group's expired offsets and, when nothing is left and it is
Empty, its metadata get tombstones in `__consumer_offsets`. An offset a transaction still holds pending
does not expire, nor does its group go.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ebb_broker.coordinator.group import Group, GroupState
from ebb_broker.coordinator.membership import GroupMembership
from ebb_broker.coordinator.offsets import CommittedOffset, OffsetManager, Record, TopicPartition

log = logging.getLogger(__name__)

_RETENTION_KEY = ("offsets-retention",)


def _commit_time(c: CommittedOffset) -> int:
    return c.commit_timestamp


def expiration_base(group: Group) -> Callable[[CommittedOffset], int] | None:
    """What an offset's retention period counts from, or None when no offset of the group may expire now.

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


def expired(
    group: Group,
    committed: dict[TopicPartition, CommittedOffset],
    now_ms: int,
    retention_ms: int,
    keep: set[TopicPartition],
) -> list[TopicPartition] | None:
    """Kafka's cleanupExpiredOffsets: the commits of `group` past their retention (none in `keep`); None
    when none of them may expire now."""
    base = expiration_base(group)
    if base is None:
        return None
    return [
        tp
        for tp, c in committed.items()
        if not group.is_subscribed_to_topic(tp[0]) and now_ms - base(c) >= retention_ms and tp not in keep
    ]


class OffsetsExpiry:
    """The periodic offsets retention check."""

    def __init__(self, groups: GroupMembership, offsets: OffsetManager) -> None:
        self.groups = groups
        self.offsets = offsets
        self.timer = groups.timer
        self.config = groups.config

    def start(self) -> None:
        self.timer.schedule(_RETENTION_KEY, self.config.offsets_retention_check_interval_ms, self.run)

    def run(self) -> None:
        """One check; the next is scheduled whatever happens to this one."""
        try:
            now = self.timer.now_ms()
            expired_offsets = deleted_groups = 0
            for group in list(self.groups.groups.values()):
                pending = self.offsets.pending_partitions(group.group_id)
                records, all_expired = self._expire(group, now, pending)
                expired_offsets += len(records)
                if all_expired and not pending and group.is_in(GroupState.EMPTY):
                    self.groups.delete(group, records)
                    deleted_groups += 1
                elif records:
                    self.offsets.store.append(group.group_id, records)
            if expired_offsets or deleted_groups:
                log.info(
                    "offsets retention: expired %d offsets, deleted %d empty groups",
                    expired_offsets,
                    deleted_groups,
                )
        finally:
            self.start()

    def _expire(self, group: Group, now_ms: int, keep: set[TopicPartition]) -> tuple[list[Record], bool]:
        """Tombstones for the expired commits of `group`, and whether nothing is left (the group may
        then be deleted if it is Empty)."""
        committed = self.offsets.by_group.get(group.group_id)
        if not committed:
            return [], True
        doomed = expired(group, committed, now_ms, self.config.offsets_retention_ms, keep)
        if doomed is None:
            return [], False
        all_expired = len(doomed) == len(committed)
        return self.offsets.remove(group.group_id, doomed), all_expired
