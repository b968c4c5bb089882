"""OffsetFetch v8 (KIP-709) for many groups, its answer decoded straight into per-topic columns.

The answer's decoder is Kafka's format, shared with the broker that writes it (`ebb_formats.offset_fetch`:
why it is a decoder of its own, and the layout); this module turns a group's error code into the
adapter's KafkaFailure and sends the requests.

The request goes through kafka-python's own connections (so TLS, SASL and the coordinator lookup are
the client's), as an object that carries the v8 request and names this module's decoder for the answer:
kafka-python internals, confined to `client_internals.py` and pinned there; the spark and compat tiers
run it against Apache Kafka and ebb-broker. Brokers without v8 (Kafka before 3.0) get the client's
one-group-per-request path.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.errors import for_code
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from ebb_formats import offset_fetch
from ebb_formats.offset_fetch import VERSION
from ebb_formats.offset_fetch import OffsetFetchDecodeError as OffsetFetchDecodeError  # what decode raises
from ebb_formats.offset_fetch import TopicCommits as TopicCommits  # the adapter's answer
from ebb_operator.kafka import client_internals
from ebb_operator.kafka.client_internals import DecodedRequest
from ebb_operator.kafka.results import KafkaFailure

GROUPS_PER_REQUEST = 100
# Requests in flight per fetch: below kafka-python's max_in_flight_requests_per_connection (5), at which
# a connection pauses and refuses more.
IN_FLIGHT = 4


def commits_on(commits: Iterable[TopicCommits], wanted: Mapping[str, Sequence[int]]) -> list[TopicCommits]:
    """A group's commits on the wanted partitions only: what a v8 request naming them answers, for the
    brokers without v8, whose answer holds everything the group committed."""
    out = []
    for t in commits:
        keep = set(wanted.get(t.topic, ()))
        rows = [(p, o) for p, o in zip(t.partitions, t.offsets, strict=True) if p in keep]
        if rows:
            out.append(TopicCommits(t.topic, [p for p, _ in rows], [o for _, o in rows]))
    return out


def decode(data: bytes) -> tuple[int, dict[str, list[TopicCommits] | KafkaFailure]]:
    """An OffsetFetch v8 answer (after the response header): throttle time, and per group its commits or
    the first error it carries (a group error, or a partition's). A garbled answer raises
    OffsetFetchDecodeError."""
    answer = offset_fetch.decode(data)
    out: dict[str, list[TopicCommits] | KafkaFailure] = {g: _failure(c, g) for g, c in answer.errors.items()}
    out.update(answer.commits)
    return answer.throttle_time_ms, out


def _failure(code: int, group: str) -> KafkaFailure:
    cls = for_code(code)
    return KafkaFailure(
        str(cls.message), f"OffsetFetch of group {group}: {cls.description}", bool(cls.retriable)
    )


# -- through kafka-python's connection ------------------------------------------------------------------


class _Answer:
    """An OffsetFetch v8 answer as this module decodes it."""

    def __init__(self, data: bytes) -> None:
        self.throttle_time_ms, self.groups = decode(data)


def _request(
    groups: Sequence[str], partitions: Mapping[str, Sequence[int]] | None = None
) -> DecodedRequest[_Answer]:
    """kafka-python's OffsetFetch v8 request, its answer decoded here."""
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    topics = (
        None  # every partition the group committed
        if partitions is None
        else [
            group.OffsetFetchRequestTopics(name=t, partition_indexes=list(ps)) for t, ps in partitions.items()
        ]
    )
    inner = OffsetFetchRequest(groups=[group(group_id=g, topics=topics) for g in groups], version=VERSION)
    return DecodedRequest(inner, VERSION, OffsetFetchResponse, _Answer)


def supported(client: KafkaAdminClient) -> bool:
    """Whether the cluster serves OffsetFetch v8 (many groups per request)."""
    _, highest = client.api_versions().get(ApiKey.OffsetFetch, (0, -1))
    return bool(highest >= VERSION)


def fetch(
    client: KafkaAdminClient, groups: Iterable[str], partitions: Mapping[str, Sequence[int]] | None = None
) -> dict[str, list[TopicCommits] | KafkaFailure]:
    """The committed offsets of `groups` (only on `partitions`, topic -> partition numbers, when given):
    one v8 request per coordinator and GROUPS_PER_REQUEST groups."""
    return client_internals.run(client, _fetch, client, list(groups), partitions)


async def _fetch(
    client: KafkaAdminClient, groups: Sequence[str], partitions: Mapping[str, Sequence[int]] | None = None
) -> dict[str, list[TopicCommits] | KafkaFailure]:
    """`fetch` as a coroutine on kafka-python's I/O loop.

    Asking for named partitions bounds the answer by what a caller checks (the Consumed guard: every
    partition of the topics it cuts) instead of by everything the groups ever committed; a partition
    without a commit is left out either way."""
    wanted = list(dict.fromkeys(groups))
    coordinators = await client_internals.group_coordinators(client, wanted)
    by_node: dict[int, list[str]] = defaultdict(list)
    for g in wanted:
        by_node[coordinators[g]].append(g)
    out: dict[str, list[TopicCommits] | KafkaFailure] = {}
    # Pipelined: up to IN_FLIGHT requests wait on the connections at once, so the broker builds the
    # next answer while this side decodes the last (answers come back in order per connection).
    waiting: deque[Any] = deque()
    for node, gs in by_node.items():
        for i in range(0, len(gs), GROUPS_PER_REQUEST):
            if len(waiting) >= IN_FLIGHT:
                out.update((await waiting.popleft()).groups)
            request = _request(gs[i : i + GROUPS_PER_REQUEST], partitions)
            waiting.append(client_internals.send(client, request, node))
    while waiting:
        out.update((await waiting.popleft()).groups)
    missing = KafkaFailure("NO_ANSWER", "the coordinator's answer left the group out", True)
    return {g: out.get(g, missing) for g in wanted}
