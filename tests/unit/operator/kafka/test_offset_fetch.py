"""The OffsetFetch v8 answer decoder against answers kafka-python's own codec encodes (Kafka's JSON spec):
every shape a broker sends decodes to the same commits, the fast fixed-layout path and the slow one alike."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.consumer.group import OffsetFetchResponse

from ebb_operator.kafka.offset_fetch import OffsetFetchDecodeError, TopicCommits, commits_on, decode

Group = OffsetFetchResponse.OffsetFetchResponseGroup
Topic = Group.OffsetFetchResponseTopics
Partition = Topic.OffsetFetchResponsePartitions


def answer(groups: list[Any]) -> bytes:
    return bytes(OffsetFetchResponse(throttle_time_ms=7, groups=groups).encode(version=8))


def part(p: int, offset: int, metadata: str | None = "", error: int = 0) -> Any:
    return Partition(
        partition_index=p,
        committed_offset=offset,
        committed_leader_epoch=3,
        metadata=metadata,
        error_code=error,
    )


@pytest.mark.parametrize("metadata", ["", None, "a commit's metadata", "é" * 300])
def test_commits_decode_whatever_metadata_they_carry(metadata: str | None) -> None:
    data = answer(
        [
            Group(
                group_id="g1",
                topics=[
                    Topic(name="orders", partitions=[part(p, 100 + p, metadata) for p in range(50)]),
                    Topic(name="pay", partitions=[part(3, 2**40, metadata), part(4, -1, metadata)]),
                ],
                error_code=0,
            ),
            Group(group_id="g2", topics=[], error_code=0),
        ]
    )
    throttle, groups = decode(data)
    assert throttle == 7
    assert groups == {
        "g1": [
            TopicCommits("orders", list(range(50)), [100 + p for p in range(50)]),
            TopicCommits("pay", [3], [2**40]),  # -1: no commit, left out
        ],
        "g2": [],
    }


def test_a_group_or_partition_error_fails_that_group_only() -> None:
    data = answer(
        [
            Group(group_id="loading", topics=[], error_code=14),  # COORDINATOR_LOAD_IN_PROGRESS
            Group(
                group_id="half",
                topics=[Topic(name="t", partitions=[part(0, 5), part(1, 6, error=29)])],  # authorization
                error_code=0,
            ),
            Group(group_id="fine", topics=[Topic(name="t", partitions=[part(0, 5)])], error_code=0),
        ]
    )
    _, groups = decode(data)
    loading, half = groups["loading"], groups["half"]
    assert (
        not isinstance(loading, list) and loading.code == "COORDINATOR_LOAD_IN_PROGRESS" and loading.retriable
    )
    assert not isinstance(half, list) and half.code == "TOPIC_AUTHORIZATION_FAILED"
    assert groups["fine"] == [TopicCommits("t", [0], [5])]


def test_a_truncated_answer_is_an_error_not_fewer_commits() -> None:
    data = answer([Group(group_id="g", topics=[Topic(name="t", partitions=[part(0, 5)] * 3)], error_code=0)])
    for cut in (len(data) - 3, len(data) // 2, 9):
        with pytest.raises(OffsetFetchDecodeError, match=r"truncated|OffsetFetch v8 answer"):
            decode(data[:cut])


def test_commits_on_keeps_only_the_wanted_partitions_in_their_order() -> None:
    commits = [TopicCommits("orders", [0, 1, 2, 5], [10, 11, 12, 15]), TopicCommits("pay", [0], [1])]
    assert commits_on(commits, {"orders": [5, 1], "logs": [0]}) == [TopicCommits("orders", [1, 5], [11, 15])]
    assert commits_on(commits, {"logs": [0]}) == []
