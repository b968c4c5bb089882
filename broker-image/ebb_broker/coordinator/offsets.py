"""Committed offsets of every group (Kafka's OffsetMetadataManager): who may commit, the commits, the
transactional ones awaiting their marker, and their deletion.

- OffsetCommit: `validate_commit` is Kafka's validateOffsetCommit (generation -1 from nobody commits for an
  Empty or unknown group; otherwise the member and generation must be current); `commit` writes the
  records to `__consumer_offsets` before the commits become visible.
- TxnOffsetCommit (KIP-98, KIP-447): the offsets are written in the producer's transaction and count for
  nothing (KIP-68 included) until the transaction coordinator's COMMIT marker; the ABORT marker drops them.
- OffsetDelete (KIP-496), DeleteGroups and DeleteTopics write tombstones for the commits they remove.
It also gives the log engine its KIP-68 input: the committed offsets of the groups consumed retention
counts. Expiry (KIP-211) is `expiry`'s; the groups themselves are `membership`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from kafka import errors as E

from ebb_broker.coordinator.group import GroupState
from ebb_broker.coordinator.membership import GroupMembership
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.log import CommittedOffsets
from ebb_formats.consumer_offsets import OffsetCommitKey, OffsetCommitValue

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int

    @classmethod
    def of(cls, value: OffsetCommitValue) -> CommittedOffset:
        return cls(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp)


def commit_record(group_id: str, tp: TopicPartition, c: CommittedOffset) -> Record:
    value = OffsetCommitValue(c.offset, c.leader_epoch, c.metadata, c.commit_timestamp)
    return OffsetCommitKey(group_id, tp[0], tp[1]).encode(), value.encode()


def tombstone(group_id: str, tp: TopicPartition) -> Record:
    return OffsetCommitKey(group_id, tp[0], tp[1]).encode(), None


# producer id -> group -> partition -> the offset its open transaction commits
PendingTxnOffsets = dict[int, dict[str, dict[TopicPartition, CommittedOffset]]]


class OffsetManager:
    """group id -> (topic, partition) -> the latest commit, and the pending transactional ones; owned by
    the event loop."""

    def __init__(self, store: OffsetsStore, groups: GroupMembership) -> None:
        self.store = store
        self.groups = groups
        self.by_group: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # Transactional offset commits (KIP-98) awaiting their transaction's marker. They count for nothing
        # (KIP-68 included) until the COMMIT marker, and are forgotten at the ABORT marker.
        self.pending_txn: PendingTxnOffsets = {}

    # ---- OffsetCommit, OffsetFetch ---------------------------------------------------------

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
        group = self.groups.groups.get(group_id)
        if group is None:
            if generation < 0:
                log.info("group %s: created by a standalone offset commit", group_id)
                self.groups.ensure_group(group_id)
                return 0
            return int(E.GroupIdNotFoundError.errno if api_version >= 9 else E.IllegalGenerationError.errno)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return 0
        if generation >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id, generation)
            if error:
                return error
        elif not group.is_in(GroupState.EMPTY):
            return int(E.UnknownMemberIdError.errno)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return int(E.RebalanceInProgressError.errno)
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self.groups.reschedule_heartbeat(group, group.members[member_id])
        return 0

    def commit(self, group_id: str, commits: dict[TopicPartition, CommittedOffset]) -> None:
        """Write the commits to `__consumer_offsets`, then make them visible."""
        self.store.append(group_id, [commit_record(group_id, tp, c) for tp, c in commits.items()])
        self.by_group.setdefault(group_id, {}).update(commits)
        self.groups.ensure_group(group_id)

    def fetch(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return self.by_group.get(group_id, {})

    def committed_snapshot(self, groups: Iterable[str]) -> CommittedOffsets:
        """The committed offsets of `groups` (the ones consumed retention counts; KIP-68 input)."""
        return CommittedOffsets(
            {g: {tp: c.offset for tp, c in self.by_group[g].items()} for g in groups if g in self.by_group}
        )

    # ---- transactional offsets (KIP-98, KIP-447) -------------------------------------------

    def validate_txn_commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's validateOffsetCommit for TxnOffsetCommit: a member's generation is checked when given
        (KIP-447); without one (generation -1, older producers) any group accepts it."""
        group = self.groups.groups.get(group_id)
        if group is None:
            if generation < 0:
                self.groups.ensure_group(group_id)
                return 0
            return int(E.IllegalGenerationError.errno)
        if group.is_in(GroupState.DEAD):
            return int(E.CoordinatorNotAvailableError.errno)
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return 0
        if generation >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id, generation)
            if error:
                return error
        return 0

    def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        commits: dict[TopicPartition, CommittedOffset],
    ) -> None:
        """Write the offsets as part of the producer's transaction; they stay pending until its marker."""
        records = [commit_record(group_id, tp, c) for tp, c in commits.items()]
        now = self.groups.timer.now_ms()
        self.store.append_transactional(group_id, producer_id, producer_epoch, records, now)
        self.pending_txn.setdefault(producer_id, {}).setdefault(group_id, {}).update(commits)
        self.groups.ensure_group(group_id)

    def complete_txn_offsets(self, producer_id: int, partition: int, *, commit: bool) -> None:
        """The transaction coordinator wrote the producer's marker to `__consumer_offsets` partition
        ``partition``: the pending offsets of the groups there become committed, or are dropped."""
        by_group = self.pending_txn.get(producer_id, {})
        for group_id in [g for g in by_group if self.store.partition_for(g) == partition]:
            offsets = by_group.pop(group_id)
            if commit:
                self.by_group.setdefault(group_id, {}).update(offsets)
                self.groups.ensure_group(group_id)
        if not by_group:
            self.pending_txn.pop(producer_id, None)

    def has_pending_txn_offset(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Whether an open transaction holds an offset of the group (of ``tp``): OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT then (KIP-447)."""
        return any(
            group_id in by_group and (tp is None or tp in by_group[group_id])
            for by_group in self.pending_txn.values()
        )

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """The partitions of the group an open transaction commits (they do not expire meanwhile)."""
        return {tp for by_group in self.pending_txn.values() for tp in by_group.get(group_id, {})}

    # ---- deletion --------------------------------------------------------------------------

    def remove(self, group_id: str, tps: Iterable[TopicPartition]) -> list[Record]:
        """Forget the commits; the tombstones to write for them."""
        committed = self.by_group.get(group_id, {})
        records = [tombstone(group_id, tp) for tp in tps if committed.pop(tp, None) is not None]
        if not committed:
            self.by_group.pop(group_id, None)
        return records

    def remove_all(self, group_id: str) -> list[Record]:
        return self.remove(group_id, list(self.by_group.get(group_id, {})))

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete (KIP-496): (group error, per-partition errors); topics the group consumes stay."""
        group = self.groups.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return int(E.GroupIdNotFoundError.errno), {}
        if not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
            return int(E.NonEmptyGroupError.errno), {}
        result: dict[TopicPartition, int] = {}
        removable: list[TopicPartition] = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp[0]):
                result[tp] = int(E.GroupSubscribedToTopicError.errno)
            else:
                result[tp] = 0
                removable.append(tp)
        records = self.remove(group_id, removable)
        if records:
            self.store.append(group_id, records)
        return 0, result

    def on_topic_deleted(self, topic: str) -> int:
        """DeleteTopics deleted ``topic``: every group's commits of its partitions get tombstones, and
        pending transactional ones are dropped, so a topic re-created with that name starts with no
        committed offset (Kafka's onPartitionsDeleted; GroupMetadataManager.cleanupGroupMetadata before
        4.0). A group left Empty with no offsets goes at the next offsets retention check, as in Kafka.
        Returns how many commits were removed."""
        doomed: dict[str, set[TopicPartition]] = {}
        for group_id, committed in self.by_group.items():
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
            removed += len(self.remove(group_id, tps))
            self.store.append(group_id, [tombstone(group_id, tp) for tp in sorted(tps)])
        return removed
