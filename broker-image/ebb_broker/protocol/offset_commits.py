"""The per-partition checks OffsetCommit and TxnOffsetCommit share (Kafka's
GroupCoordinator.validateOffsetCommit / handleTxnCommitOffsets apply the same ones)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kafka.errors import OffsetMetadataTooLargeError, UnknownTopicOrPartitionError

from ebb_broker.coordinator.offsets import CommittedOffset
from ebb_broker.protocol.authz import TOPIC_AUTHORIZATION_FAILED
from ebb_broker.protocol.topics import has_partition

TopicPartition = tuple[str, int]


def checked_commits(
    request_topics: Any,
    *,
    error: int,
    unreadable: Collection[str],
    topics: Mapping[str, Any],
    metadata_max_bytes: int,
    with_leader_epoch: bool,
    now_ms: int,
) -> tuple[dict[TopicPartition, CommittedOffset], dict[TopicPartition, int]]:
    """The commits to write and every partition's error code: a request-wide `error` first, then READ
    on the topic, the partition's existence and the metadata size; nothing refused is committed."""
    commits: dict[TopicPartition, CommittedOffset] = {}
    errors: dict[TopicPartition, int] = {}
    for t in request_topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if error:
                errors[tp] = error
            elif t.name in unreadable:
                errors[tp] = TOPIC_AUTHORIZATION_FAILED
            elif not has_partition(topics, t.name, p.partition_index):
                errors[tp] = UnknownTopicOrPartitionError.errno
            elif len(metadata.encode()) > metadata_max_bytes:
                errors[tp] = OffsetMetadataTooLargeError.errno
            else:
                epoch = p.committed_leader_epoch if with_leader_epoch else -1
                commits[tp] = CommittedOffset(p.committed_offset, epoch, metadata, now_ms)
                errors[tp] = 0
    return commits, errors
