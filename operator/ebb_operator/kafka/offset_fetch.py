"""OffsetFetch v8 (KIP-709) for many groups, its answer decoded straight into per-topic columns.

Why a codec of its own: the analysis job reads every committed offset of a cluster (10 M on a large one),
and kafka-python decodes each partition of an OffsetFetch answer into objects and then a dict entry
(about 4.4 us per partition, measured: 45 CPU seconds for 10 M). Here a topic's partitions are decoded in
one `struct.iter_unpack` when they have the common fixed layout (no commit metadata, no tagged fields,
no error; checked byte by byte, see `_fixed_layout`), and one by one otherwise.

The request goes through kafka-python's own connections (so TLS, SASL and the coordinator lookup are
the client's), as an object that carries the v8 request and names this module's decoder for the answer:
kafka-python internals, confined to `client_internals.py` and pinned there; the spark and compat tiers
run it against Apache Kafka and ebb-broker. Brokers without v8 (Kafka before 3.0) get the client's
one-group-per-request path.

OffsetFetch response v8 (flexible): throttle_time_ms int32, groups [group_id string, topics [name string,
partitions [partition_index int32, committed_offset int64, committed_leader_epoch int32, metadata
nullable string, error_code int16, tags], tags], error_code int16, tags], tags. Arrays and strings are
compact (unsigned varint length + 1); `tags` is an unsigned varint count of tagged fields, each a tag
and a size (varints) and that many bytes.
"""

from __future__ import annotations

import struct
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.errors import for_code
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from ebb_operator.kafka import client_internals
from ebb_operator.kafka.client_internals import DecodedRequest
from ebb_operator.kafka.results import KafkaFailure

VERSION = 8
GROUPS_PER_REQUEST = 100
# Requests in flight per fetch: below kafka-python's max_in_flight_requests_per_connection (5), at which
# a connection pauses and refuses more.
IN_FLIGHT = 4
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">iqi")
_FIXED = ">iqi4x"  # partition_index, committed_offset, leader epoch, then metadata, error (2), tags: 20 bytes
_FIXED_SIZE = 20


@dataclass(frozen=True)
class TopicCommits:
    """A group's committed offsets on one topic (partitions without a commit left out)."""

    topic: str
    partitions: list[int]
    offsets: list[int]


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


class OffsetFetchDecodeError(ValueError):
    """An answer that does not follow the v8 layout (truncated or garbled)."""


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise OffsetFetchDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise OffsetFetchDecodeError("varint too long")


def _string(buf: bytes, pos: int) -> tuple[str | None, int]:
    n, pos = _uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        raise OffsetFetchDecodeError("truncated string")
    return buf[pos:end].decode(), end


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise OffsetFetchDecodeError("truncated tagged fields")
    return pos


_ZEROS = bytes(4096)


def _fixed_layout(chunk: bytes, n: int) -> bool:
    """Whether `chunk` is n partitions of exactly 20 bytes with no error. By induction from the first: a
    partition whose metadata length byte is 0 or 1 (null or empty) and whose tagged-field count is 0 is 20
    bytes long, so the next starts 20 bytes on, where the same check applies."""
    if len(chunk) != n * _FIXED_SIZE:
        return False
    zeros = _ZEROS[:n] if n <= len(_ZEROS) else bytes(n)
    return (
        not chunk[16::_FIXED_SIZE].translate(None, b"\x00\x01")
        and chunk[17::_FIXED_SIZE] == zeros
        and chunk[18::_FIXED_SIZE] == zeros
        and chunk[19::_FIXED_SIZE] == zeros
    )


def decode(data: bytes) -> tuple[int, dict[str, list[TopicCommits] | KafkaFailure]]:
    """An OffsetFetch v8 answer (after the response header): throttle time, and per group its commits or
    the first error it carries (a group error, or a partition's). A garbled answer raises."""
    try:
        return _decode(data)
    except (struct.error, UnicodeDecodeError) as e:
        raise OffsetFetchDecodeError(f"OffsetFetch v{VERSION} answer: {e}") from e


def _decode(data: bytes) -> tuple[int, dict[str, list[TopicCommits] | KafkaFailure]]:
    (throttle,) = _I32.unpack_from(data, 0)
    pos = 4
    n_groups, pos = _uvarint(data, pos)
    out: dict[str, list[TopicCommits] | KafkaFailure] = {}
    for _ in range(max(0, n_groups - 1)):
        group, pos = _string(data, pos)
        n_topics, pos = _uvarint(data, pos)
        topics: list[TopicCommits] = []
        error = 0
        for _ in range(max(0, n_topics - 1)):
            name, pos = _string(data, pos)
            n, pos = _uvarint(data, pos)
            n = max(0, n - 1)
            end = pos + n * _FIXED_SIZE
            if _fixed_layout(data[pos:end], n):
                rows = [(p, o) for p, o, _ in struct.iter_unpack(_FIXED, data[pos:end]) if o >= 0]
                pos = end
            else:
                rows = []
                for _ in range(n):
                    if pos + _PARTITION.size > len(data):
                        raise OffsetFetchDecodeError("truncated partition")
                    p, o, _epoch = _PARTITION.unpack_from(data, pos)
                    _, pos = _string(data, pos + _PARTITION.size)
                    (code,) = _I16.unpack_from(data, pos)
                    pos = _skip_tags(data, pos + 2)
                    if code:
                        error = error or code
                    elif o >= 0:
                        rows.append((p, o))
            pos = _skip_tags(data, pos)
            if rows and name is not None:
                topics.append(TopicCommits(name, [r[0] for r in rows], [r[1] for r in rows]))
        (code,) = _I16.unpack_from(data, pos)
        pos = _skip_tags(data, pos + 2)
        error = code or error
        if group is not None:
            out[group] = _failure(error, group) if error else topics
    return throttle, out


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
