"""The classic group coordinator: one front for what Kafka's GroupCoordinatorShard puts together.

Each concern has its module, as Kafka splits them:
- `membership`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, sessions and rebalances (GroupMetadataManager);
- `offsets`: commit validation, commits, transactional offsets, OffsetDelete (OffsetMetadataManager);
- `loading`: the state read back from `__consumer_offsets` on start (CoordinatorLoader, replay);
- `expiry`: offsets retention, KIP-211 (cleanupGroupMetadata).
This front wires them together (handlers reach `membership` and `offsets` through it) and answers what
spans them: loading, the KIP-68 snapshot, DeleteGroups (the offsets and the group). Everything runs on
one event loop, so no locks are needed; every change is written to `__consumer_offsets` before it is
acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from kafka import errors as E

from ebb_broker.coordinator.expiry import OffsetsExpiry
from ebb_broker.coordinator.group import Group, GroupState
from ebb_broker.coordinator.group_config import GroupCoordinatorConfig
from ebb_broker.coordinator.loading import load
from ebb_broker.coordinator.membership import GroupMembership
from ebb_broker.coordinator.offsets import CommittedOffset, OffsetManager
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.timer import CoordinatorTimer
from ebb_broker.log import CommittedOffsets

log = logging.getLogger(__name__)

__all__ = ["CommittedOffset", "GroupCoordinator", "GroupCoordinatorConfig"]


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
        self.membership = GroupMembership(store, timer, self.config, loop=loop)
        self.offsets = OffsetManager(store, self.membership)
        self.expiry = OffsetsExpiry(self.membership, self.offsets)
        self.loaded = False

    @property
    def groups(self) -> dict[str, Group]:
        return self.membership.groups

    # ---- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Replay `__consumer_offsets` (`loading`)."""
        state = load(self.store)
        self.membership.groups = state.groups
        self.offsets.by_group = state.committed
        self.offsets.pending_txn = state.pending_txn
        self.loaded = True

    def start(self) -> None:
        """Start the loaded members' sessions and the periodic offsets retention check."""
        self.membership.start()
        self.expiry.start()

    # ---- KIP-68 input ----------------------------------------------------------------------

    def committed_snapshot(self, groups: Iterable[str]) -> CommittedOffsets:
        """The committed offsets of `groups`, frozen for the retention pass (which runs off the event
        loop); unknown until __consumer_offsets is loaded. Call it on the event loop, which owns this
        state."""
        if not self.loaded:
            return CommittedOffsets(known=False)
        return self.offsets.committed_snapshot(groups)

    # ---- DeleteGroups ------------------------------------------------------------------------------

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups: only an Empty group; tombstones for its offsets and its metadata."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return int(E.GroupIdNotFoundError.errno)
        if not group.is_in(GroupState.EMPTY):
            return int(E.NonEmptyGroupError.errno)
        self.membership.delete(group, self.offsets.remove_all(group_id))
        return 0

    def cleanup_group_metadata(self) -> None:
        """One offsets retention check now (`expiry`); it runs by itself every
        `offsets.retention.check.interval.ms`."""
        self.expiry.run()
