"""Loading the group coordinator's state from `__consumer_offsets` on start (Kafka's CoordinatorLoader and
the replay of GroupCoordinatorShard).

The latest record per key wins and a tombstone removes its key. Groups come back as Kafka's coordinator
loads them: Stable with the members, leader and assignments of their last stored generation, or Empty;
after a restart clients find their group Stable in its last stored generation, as clients of Kafka do
after a coordinator failover (`GroupMembership.start` then gives every member a fresh session).

Transactional offset commits (TxnOffsetCommit) count from their transaction's COMMIT marker on, and never
after an ABORT marker; a transaction still open comes back pending. As Kafka's
OffsetMetadataManager.replay, a tombstone also removes its key's pending transactional offset (a deleted
topic's offsets do not come back with a COMMIT marker).

An unreadable key or value is skipped with a warning: one bad record must not stop the broker. Records
of other group kinds (KIP-848 consumer groups, share and streams groups) are not Ebb's to load.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ebb_broker.coordinator.group import Group, GroupState, Member
from ebb_broker.coordinator.offsets import CommittedOffset, PendingTxnOffsets, TopicPartition
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_formats.consumer_offsets import (
    OFFSETS_TOPIC,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_key,
)
from ebb_formats.record_batch import COMMIT

log = logging.getLogger(__name__)

Key = OffsetCommitKey | GroupMetadataKey


@dataclass
class LoadedState:
    """What `__consumer_offsets` holds: the groups, their commits and the open transactions' offsets."""

    groups: dict[str, Group] = field(default_factory=dict)
    committed: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    pending_txn: PendingTxnOffsets = field(default_factory=dict)


def load(store: OffsetsStore) -> LoadedState:
    """Replay `__consumer_offsets` (creating it on first use) into the coordinator's state."""
    store.ensure_topic()
    state = LoadedState()
    group_values: dict[str, GroupMetadataValue] = {}
    for key, value in _latest_records(store, state.pending_txn).items():
        if value is None:
            continue
        try:
            if isinstance(key, OffsetCommitKey):
                committed = CommittedOffset.of(OffsetCommitValue.decode(value))
                state.committed.setdefault(key.group, {})[(key.topic, key.partition)] = committed
            else:
                group_values[key.group] = GroupMetadataValue.decode(value)
        except RecordFormatError as exc:
            log.warning("skipping unreadable %s record %s: %s", OFFSETS_TOPIC, key, exc)
    for group_id, gv in group_values.items():
        state.groups[group_id] = group_from_record(group_id, gv)
    for group_id in state.committed:
        state.groups.setdefault(group_id, Group(group_id))
    for group_id in {g for by_group in state.pending_txn.values() for g in by_group}:
        state.groups.setdefault(group_id, Group(group_id))
    log.info(
        "loaded %d groups (%d members) and %d committed offsets",
        len(state.groups),
        sum(len(g.members) for g in state.groups.values()),
        sum(len(c) for c in state.committed.values()),
    )
    return state


def _latest_records(store: OffsetsStore, pending_txn: PendingTxnOffsets) -> dict[Key, bytes | None]:
    """The latest value (None: a tombstone) of every key in `__consumer_offsets`; the offsets of
    transactions still open go to ``pending_txn``.

    Earlier ebb-broker versions placed groups whose Java hashCode is negative in another partition
    than Kafka does (they masked the sign bit instead of Kafka's Math.abs). Such records are older
    than any in the group's proper partition, so those win; a misplaced value is copied to the
    proper partition when nothing newer is there, and gets a tombstone where it was, so compaction
    removes it and it can never come back once the proper partition's tombstones are cleaned.
    """
    placed: dict[Key, bytes | None] = {}
    misplaced: dict[Key, tuple[int, bytes, bytes]] = {}
    # producer id -> partition -> offset records of its open transaction (TxnOffsetCommit), in order
    open_txns: dict[int, dict[int, dict[OffsetCommitKey, bytes | None]]] = {}
    for rec in store.replay():
        partition, key_bytes, value = rec.partition, rec.key, rec.value
        if rec.marker is not None:
            # The transaction coordinator's marker: its offsets become committed now, or never.
            done = open_txns.get(rec.producer_id, {}).pop(partition, {})
            if rec.marker == COMMIT:
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
            if isinstance(key, OffsetCommitKey):
                open_txns.setdefault(rec.producer_id, {}).setdefault(partition, {})[key] = value
            continue
        if value is None and isinstance(key, OffsetCommitKey):
            for by_partition in open_txns.values():
                by_partition.get(partition, {}).pop(key, None)
        if partition == store.partition_for(key.group):
            placed[key] = value
        elif value is not None:
            misplaced[key] = (partition, key_bytes, value)
        else:
            misplaced.pop(key, None)
    for key, (partition, key_bytes, value) in misplaced.items():
        if key not in placed:
            store.append(key.group, [(key_bytes, value)])
            placed[key] = value
        store.append_to(partition, [(key_bytes, None)])
    if misplaced:
        log.info(
            "moved %d records to the %s partitions Kafka assigns their groups", len(misplaced), OFFSETS_TOPIC
        )
    for pid, by_partition in open_txns.items():
        for records in by_partition.values():
            for key, value in records.items():
                if value is None:
                    continue
                try:
                    committed = CommittedOffset.of(OffsetCommitValue.decode(value))
                except RecordFormatError as exc:
                    log.warning("skipping unreadable transactional offset %s: %s", key, exc)
                    continue
                group = pending_txn.setdefault(pid, {}).setdefault(key.group, {})
                group[(key.topic, key.partition)] = committed
    return placed


def group_from_record(group_id: str, gv: GroupMetadataValue) -> Group:
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
