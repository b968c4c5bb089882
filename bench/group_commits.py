"""Committed offsets for many groups, as a benchmark's setup writes them (one OffsetCommit per group)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata


def commit_groups(
    bootstrap: str, commits: Iterable[tuple[str, Mapping[tuple[str, int], int]]], request_timeout_ms: int
) -> None:
    """Commit each (group, {(topic, partition): offset}). The first commit creates `__consumer_offsets`,
    whose leaders take a moment: retriable errors are retried once a second, for at most a minute."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=request_timeout_ms)
    try:
        for group, offsets in commits:
            request = {KTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            for attempt in range(60):
                try:
                    admin.alter_group_offsets(group, request)
                    break
                except KafkaError as e:
                    if not e.retriable or attempt == 59:
                        raise
                    time.sleep(1)
    finally:
        admin.close()
