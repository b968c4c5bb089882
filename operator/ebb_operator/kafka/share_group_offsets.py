"""DescribeShareGroupOffsets (API key 90, v0, KIP-932): where each share group stands on each partition.

A share group (Kafka 4.x queues) keeps no committed offsets; its consumed level on a partition is the
share-partition start offset (SPSO): every record below it was acknowledged or archived, so no member of
the group will read it again. Kafka's retention ignores it, which is why queues never free what every
consumer acknowledged; Ebb counts it as a consumer group's commit (docs/analysis.md, "Share groups").

Deviations from Kafka's admin client: one request per coordinator for all of its groups (Kafka's admin
sends one per group); a group or partition error is the group's failure, so a caller never plans with a
share group half read. The codec is kafka-python's, generated from the message definitions in
`ebb_operator.kafka.messages`, and the requests go over the client's own connections
(`client_internals`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.errors import for_code

from ebb_formats.offset_fetch import TopicCommits
from ebb_operator.kafka import client_internals
from ebb_operator.kafka.results import KafkaFailure, TopicPartition

API_KEY = 90
VERSION = 0
# A partition the group is assigned but has no state for yet (the coordinator is initialising it).
NO_START_OFFSET = -1


DescribeShareGroupOffsetsRequest = client_internals.message_class(
    "DescribeShareGroupOffsetsRequest", "ebb_operator.kafka.messages"
)
DescribeShareGroupOffsetsResponse = client_internals.message_class(
    "DescribeShareGroupOffsetsResponse", "ebb_operator.kafka.messages"
)


def supported(client: KafkaAdminClient) -> bool:
    """Whether the cluster serves DescribeShareGroupOffsets v0 (Apache Kafka 4 with share groups; not
    ebb-broker, which has none)."""
    lowest, highest = client.api_versions().get(API_KEY, (0, -1))
    return bool(lowest <= VERSION <= highest)


def request(groups: Sequence[str]) -> Any:
    """One request for `groups`, on every partition they have state for (Topics null)."""
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    return DescribeShareGroupOffsetsRequest(
        groups=[group(group_id=g, topics=None) for g in groups], version=VERSION
    )


def answer(response: Any) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
    """Per group: its start offset per partition (NO_START_OFFSET where it has none yet), or its failure
    (the group's error, else the first partition error)."""
    out: dict[str, dict[TopicPartition, int] | KafkaFailure] = {}
    for g in response.groups:
        if g.error_code:
            out[g.group_id] = _failure(g.group_id, g.error_code, g.error_message)
            continue
        offsets: dict[TopicPartition, int] = {}
        failure = None
        for t in g.topics:
            for p in t.partitions:
                if p.error_code and failure is None:
                    failure = _failure(
                        g.group_id, p.error_code, p.error_message, f"{t.topic_name}-{p.partition_index}"
                    )
                offsets[TopicPartition(t.topic_name, p.partition_index)] = max(
                    NO_START_OFFSET, p.start_offset
                )
        out[g.group_id] = failure or offsets
    return out


def _failure(group: str, code: int, message: str | None, where: str = "") -> KafkaFailure:
    cls = for_code(code)
    on = f" on {where}" if where else ""
    return KafkaFailure(
        str(cls.message),
        f"DescribeShareGroupOffsets of share group {group}{on}: {message or cls.description}",
        bool(cls.retriable),
    )


def fetch(
    client: KafkaAdminClient, groups: Iterable[str]
) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
    """The start offsets of share `groups`, one request per group coordinator."""
    return client_internals.run(client, _fetch, client, list(dict.fromkeys(groups)))


async def _fetch(
    client: KafkaAdminClient, groups: Sequence[str]
) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
    if not groups:
        return {}
    coordinators = await client_internals.group_coordinators(client, groups)
    by_node: dict[int, list[str]] = defaultdict(list)
    for g in groups:
        by_node[coordinators[g]].append(g)
    out: dict[str, dict[TopicPartition, int] | KafkaFailure] = {}
    for node, gs in by_node.items():
        out.update(answer(await client_internals.send(client, request(gs), node)))
    missing = KafkaFailure("NO_ANSWER", "the coordinator's answer left the share group out", True)
    return {g: out.get(g, missing) for g in groups}


def as_commits(offsets: Mapping[TopicPartition, int], topics: Iterable[str]) -> list[TopicCommits]:
    """A share group's start offsets on `topics` in the columns OffsetFetch answers in: a topic it has
    state on is one it reads, and a partition without a start offset yet is left out, as a partition
    without a commit is (so it holds what a reader's missing commit holds)."""
    wanted = set(topics)
    by_topic: dict[str, TopicCommits] = {}
    for tp, offset in sorted(offsets.items()):
        if tp.topic not in wanted:
            continue
        column = by_topic.setdefault(tp.topic, TopicCommits(tp.topic, [], []))
        if offset != NO_START_OFFSET:
            column.partitions.append(tp.partition)
            column.offsets.append(offset)
    return list(by_topic.values())
