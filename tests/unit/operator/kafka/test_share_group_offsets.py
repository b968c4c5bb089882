"""DescribeShareGroupOffsets (KIP-932) as the operator reads it: the request's bytes are Kafka's, and every
answer becomes start offsets or the group's failure, never a partial picture."""

from __future__ import annotations

import io
import uuid

from ebb_formats.offset_fetch import TopicCommits
from ebb_operator.analysis.snapshot import GroupState, _share_groups
from ebb_operator.kafka import GroupListing, KafkaFailure, TopicPartition
from ebb_operator.kafka.share_group_offsets import (
    DescribeShareGroupOffsetsResponse as Response,
)
from ebb_operator.kafka.share_group_offsets import answer, as_commits, request

Group = Response.DescribeShareGroupOffsetsResponseGroup
Topic = Group.DescribeShareGroupOffsetsResponseTopic
Partition = Topic.DescribeShareGroupOffsetsResponsePartition


def _partition(index: int, start: int, error: int = 0, message: str | None = None) -> object:
    return Partition(
        partition_index=index, start_offset=start, leader_epoch=0, error_code=error, error_message=message
    )


def _group(name: str, topics: dict[str, list[object]], error: int = 0, message: str | None = None) -> object:
    listed = [Topic(topic_name=t, topic_id=uuid.uuid4(), partitions=ps) for t, ps in topics.items()]
    return Group(group_id=name, topics=listed, error_code=error, error_message=message)


def _over_the_wire(*groups: object) -> object:
    """The answer encoded as a broker sends it and decoded as the client reads it."""
    encoded = Response(throttle_time_ms=0, groups=list(groups), version=0).encode(version=0)
    return Response.decode(io.BytesIO(bytes(encoded)), version=0)


def test_the_request_asks_every_partition_with_state_in_kafkas_flexible_v0_layout() -> None:
    # compact array of 1 group, compact string "sg", Topics null (every partition), tagged fields x2
    assert bytes(request(["sg"]).encode(version=0)) == b"\x02\x03sg\x00\x00\x00"


def test_an_answer_is_start_offsets_or_the_groups_failure() -> None:
    got = answer(
        _over_the_wire(
            _group("ok", {"t": [_partition(0, 12), _partition(1, -1)]}),
            _group("gone", {}, error=69, message="Group gone is not a share group."),
            _group("half", {"t": [_partition(0, 3), _partition(1, 0, error=14)]}),
        )
    )
    assert got["ok"] == {TopicPartition("t", 0): 12, TopicPartition("t", 1): -1}
    gone, half = got["gone"], got["half"]
    assert isinstance(gone, KafkaFailure) and gone.code == "GROUP_ID_NOT_FOUND" and not gone.retriable
    assert "Group gone is not a share group." in gone.message
    # One partition's error fails the whole group: a plan never counts a share group half read.
    assert isinstance(half, KafkaFailure) and half.code == "COORDINATOR_LOAD_IN_PROGRESS" and half.retriable
    assert "on t-1" in half.message


def test_start_offsets_read_as_commits_where_a_partition_without_one_holds_as_a_missing_commit() -> None:
    offsets = {TopicPartition("a", 1): 7, TopicPartition("a", 0): 5, TopicPartition("b", 0): -1}
    offsets[TopicPartition("other", 0)] = 9
    assert as_commits(offsets, ["a", "b", "c"]) == [
        TopicCommits("a", [0, 1], [5, 7]),
        TopicCommits("b", [], []),
    ]


class _Cluster:
    """What `_share_groups` asks of the cluster: DescribeShareGroupOffsets' answers, given."""

    def __init__(self, answers: dict[str, dict[TopicPartition, int] | KafkaFailure]) -> None:
        self.answers = answers

    def share_group_offsets(self, groups: object) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
        return {g: self.answers[g] for g in groups}  # type: ignore[attr-defined]


def test_share_groups_join_the_snapshot_as_groups_with_their_start_offsets_as_commits() -> None:
    tp = TopicPartition
    matched = [tp("orders", 0), tp("orders", 1)]
    failure = KafkaFailure("COORDINATOR_NOT_AVAILABLE", "no coordinator", True)
    cluster = _Cluster({
        "busy": {tp("orders", 0): 4, tp("orders", 1): -1, tp("elsewhere", 0): 9},
        "idle": {tp("orders", 0): 8},
        "down": failure,
    })  # fmt: skip
    listings = [GroupListing("busy", "STABLE", "share"), GroupListing("idle", "EMPTY", "share")]
    listings.append(GroupListing("down", "STABLE", "share"))
    rows, offsets = _share_groups(cluster, listings, matched, 1_000, {"idle": 400})  # type: ignore[arg-type]
    assert rows == [
        GroupState("busy", "STABLE", None, ["orders"], None, None),  # members: some, not how many
        GroupState("idle", "EMPTY", 0, ["orders"], None, 400),  # empty since the operator first saw it so
        GroupState("down", "STABLE", None, [], f"DescribeShareGroupOffsets: {failure}", None),
    ]
    # busy has no start offset on orders-1 yet: it reads the topic, so that partition holds.
    assert offsets == {"busy": {tp("orders", 0): 4}, "idle": {tp("orders", 0): 8}}
