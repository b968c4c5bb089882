"""Hostile requests for any API key and version, built generically from kafka-python's message schemas.

Nothing here is written per API: a request is drawn by walking its schema (Apache Kafka's JSON message
specs, as kafka-python 3 loads them) field by field, each value from a strategy chosen by the field's
type, tilted by its `entityType` or name towards what breaks brokers: the same topic or partition many
times, 0, -1 and the integer extremes, empty, null and huge arrays and strings, internal topic names,
control characters and newlines in names, and values the broker handed out earlier on (member ids,
generations, producer ids, topic ids) reused where they no longer fit, which makes out-of-order sequences
(SyncGroup before JoinGroup, a commit for a stale generation, EndTxn with no transaction) likely.

A drawn request is a plain tree (`HostileRequest.body`) that prints compactly (`[x] * 2000`), so the
minimal failing request Hypothesis reports can be pasted into a regression test and rebuilt with
`HostileRequest.message()`.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.record.memory_records import MemoryRecordsBuilder

from ebb_broker.protocol.codec import MESSAGES, messages_for

INT_EXTREMES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
# Names with what a name check must refuse, or what two names may not share (Kafka's Topic.validate).
HOSTILE_NAMES = (
    "evil\n",
    "a.b",
    "a_b",
    "",
    ".",
    "..",
    "x" * 249,
    "y" * 250,
    "nul\x00name",
    "tab\tname",
    "caf\u00e9",
    "-",
    "__fuzz",
)
CONFIG_NAMES = (
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "segment.ms",
    "max.message.bytes",
    "min.compaction.lag.ms",
    "message.timestamp.type",
    "compression.type",
    "retention.commitoffset.ms",
    "retention.commitoffset.groups",
    "log.retention.ms",
    "offsets.topic.num.partitions",
    "no.such.config",
)
CONFIG_VALUES = (
    "compact",
    "delete",
    "compact,delete",
    "0",
    "-1",
    "1",
    "14",
    str(2**63 - 1),
    "9" * 30,
    "gzip",
)
PRINCIPALS = ("User:*", "User:ANONYMOUS", "User:admin", "User:mallory", "Group:x", "garbage", "User:")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", "")
# Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch, JoinGroup, SyncGroup, CreateTopics,
# DeleteRecords, InitProducerId.
DATA_PATH = frozenset({0, 1, 2, 3, 8, 9, 11, 14, 19, 21, 22})
REPEATS = (2, 3, 10, 100, 1000, 2000, 10_000, 20_000)
# Field names whose values the broker hands out and a later request may reuse (a response's field is
# harvested under the name on the right).
HARVESTED = {
    "member_id": "member_id",
    "leader": "member_id",
    "generation_id": "generation_id",
    "producer_id": "producer_id",
    "producer_epoch": "producer_epoch",
    "topic_id": "topic_id",
    "high_watermark": "offset",
    "log_start_offset": "offset",
    "base_offset": "offset",
    "last_stable_offset": "offset",
}
# Request fields filled from a harvested pool, sometimes.
REUSED = {
    "member_id": "member_id",
    "generation_id": "generation_id",
    "generation_id_or_member_epoch": "generation_id",
    "producer_id": "producer_id",
    "producer_epoch": "producer_epoch",
    "topic_id": "topic_id",
    "fetch_offset": "offset",
    "committed_offset": "offset",
    "offset": "offset",
}


@dataclass(frozen=True)
class Scale:
    """How large the huge values get: the CI budget keeps frames small, the long budget does not."""

    max_repeat: int = 2000
    max_string: int = 4096
    max_bytes: int = 64 * 1024
    max_records: int = 20


@dataclass(frozen=True)
class Names:
    """The names requests pick from: the harness's own topics and groups, plus the hostile ones."""

    topics: tuple[str, ...]
    groups: tuple[str, ...]
    transactional_ids: tuple[str, ...]
    # Names the hostile principal may not touch (the control topic and group): requests still try.
    forbidden: tuple[str, ...] = ()
    sasl_tokens: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Seen:
    """A value the broker handed out earlier in the sequence (`pool`), the `pick`-th most recent; a
    fallback when none was seen yet. Resolved when the request is sent."""

    pool: str
    pick: int


@dataclass(frozen=True)
class Batch:
    """A v2 record batch, built when sent (its producer id may be a `Seen` one)."""

    count: int
    value_size: int
    compression: int = 0
    producer_id: int | Seen = -1
    producer_epoch: int | Seen = -1
    base_sequence: int = -1
    transactional: bool = False

    def encode(self, resolve: Callable[[Any], Any]) -> bytes:
        pid, epoch = (
            resolve(v) if isinstance(v, Seen) else v for v in (self.producer_id, self.producer_epoch)
        )
        idempotent = pid >= 0 and epoch >= 0
        builder = MemoryRecordsBuilder(
            magic=2,
            compression_type=self.compression,
            batch_size=1 << 30,
            transactional=self.transactional and idempotent,
            producer_id=pid if idempotent else -1,
            producer_epoch=epoch if idempotent else -1,
            base_sequence=max(self.base_sequence, 0) if idempotent else -1,
        )
        for i in range(self.count):
            builder.append(0, f"k{i % 3}".encode(), b"v" * self.value_size)
        builder.close()
        return bytes(builder.buffer())

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={v!r}"
            for k, v in (
                ("compression", self.compression),
                ("producer_id", self.producer_id),
                ("producer_epoch", self.producer_epoch),
                ("base_sequence", self.base_sequence),
                ("transactional", self.transactional),
            )
            if v not in (0, -1, False)
        )
        return f"Batch({self.count}, {self.value_size}{extra})"


@dataclass(frozen=True)
class Embedded:
    """Bytes that are themselves a schema'd message (the consumer protocol's subscription and
    assignment inside JoinGroup and SyncGroup), built when sent."""

    message: Any
    version: int
    body: Mapping[str, Any]

    def encode(self, resolve: Callable[[Any], Any]) -> bytes:
        obj = _build(self.message._struct, self.body, resolve, top=self.message, version=self.version)
        return bytes(obj.encode(version=self.version))

    def __repr__(self) -> str:
        return f"Embedded({self.message.__name__}, {self.version}, {show(self.body)})"


@dataclass(frozen=True)
class Mutation:
    """Byte-level damage applied to the encoded frame: (kind, position, value) steps, positions taken
    modulo the frame's length so they fit whatever the frame became."""

    steps: tuple[tuple[str, int, int], ...]


class _ForbiddenNull:
    """A null where the schema does not allow one (kafka-python encodes it as a -1 length)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _ForbiddenNull()


@dataclass(frozen=True)
class HostileRequest:
    api_key: int
    version: int
    body: Mapping[str, Any]
    mutation: Mutation | None = None
    # Where the body holds a NULL the schema forbids (a request Kafka refuses by closing the connection).
    forbidden_null: str | None = None

    @classmethod
    def of(
        cls, api: str, version: int, body: Mapping[str, Any], forbidden_null: str | None = None
    ) -> HostileRequest:
        """The request of API `api` (its name, as `HostileRequest.name`): what the repr prints, so a
        failing request pastes into a regression test as it was printed."""
        key = next(k for k, m in MESSAGES.items() if m.request.name == f"{api}Request")
        return cls(key, version, body, forbidden_null=forbidden_null)

    @property
    def name(self) -> str:
        return str(messages_for(self.api_key).request.name).removesuffix("Request")

    def message(self, resolve: Callable[[Any], Any] = lambda v: v) -> Any:
        """The kafka-python request object (placeholders resolved by `resolve`)."""
        cls = messages_for(self.api_key).request
        return _build(cls._struct, self.body, resolve, top=cls[self.version], version=self.version)

    def frame(self, correlation_id: int, resolve: Callable[[Any], Any] = lambda v: v) -> bytes:
        msg = self.message(resolve)
        msg.with_header(correlation_id=correlation_id, client_id="ebb-hostile")
        data = bytearray(msg.encode(version=self.version, header=True, framed=True))
        if self.mutation is not None:
            data = mutate(data, self.mutation)
        return bytes(data)

    def __repr__(self) -> str:
        null = f", forbidden_null={self.forbidden_null!r}" if self.forbidden_null else ""
        damaged = f".damaged({self.mutation!r})" if self.mutation else ""
        return f"HostileRequest.of({self.name!r}, {self.version}, {show(self.body)}{null}){damaged}"

    def damaged(self, mutation: Mutation) -> HostileRequest:
        return dataclasses.replace(self, mutation=mutation)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis prints a failing step's arguments with this (not field by field)."""
        printer.text(repr(self))


def show(value: Any) -> str:
    """A compact repr: runs of equal list items print as `[x] * n`."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        parts: list[str] = []
        i = 0
        while i < len(value):
            j = i
            while j + 1 < len(value) and value[j + 1] == value[i]:
                j += 1
            item = show(value[i])
            parts.append(f"[{item}] * {j - i + 1}" if j > i else f"[{item}]")
            i = j + 1
        return " + ".join(parts) if parts else "[]"
    if isinstance(value, str | bytes) and len(value) > 40 and value == value[:1] * len(value):
        return f"{value[:1]!r} * {len(value)}"
    return repr(value)


def mutate(data: bytearray, mutation: Mutation) -> bytearray:
    for kind, position, value in mutation.steps:
        if kind == "flip" and len(data) > 4:
            data[4 + position % (len(data) - 4)] = value & 0xFF
        elif kind == "truncate" and len(data) > 5:
            data = data[: 5 + position % (len(data) - 5)]
            data[0:4] = (len(data) - 4).to_bytes(4, "big", signed=True)
        elif kind == "insert":
            i = 4 + position % (len(data) - 3)
            data[i:i] = value.to_bytes(4, "big", signed=True)[: 1 + position % 4]
            data[0:4] = (len(data) - 4).to_bytes(4, "big", signed=True)
        elif kind == "size":
            data[0:4] = value.to_bytes(4, "big", signed=True)
        elif kind in ("api_key", "api_version") and len(data) >= 8:
            # The header's request_api_key (bytes 4-5) or request_api_version (6-7): an unknown API, or
            # a version outside what ApiVersions advertised, with the body of another.
            at = 4 if kind == "api_key" else 6
            data[at : at + 2] = (value % 2**16).to_bytes(2, "big")
    return data


# -- building the kafka-python objects --------------------------------------------------------------


def _build(
    struct: Any, body: Mapping[str, Any], resolve: Callable[[Any], Any], *, top: Any, version: int
) -> Any:
    return top(**_Builder(resolve).fields(struct, body))


class _Builder:
    """Turns a drawn body into kafka-python objects; an element repeated 20,000 times (the same dict)
    is built once."""

    def __init__(self, resolve: Callable[[Any], Any]) -> None:
        self.resolve = resolve
        self._built: dict[int, Any] = {}

    def fields(self, struct: Any, body: Mapping[str, Any]) -> dict[str, Any]:
        return {name: self.value(struct.fields[name], v) for name, v in body.items()}

    def struct(self, f: Any, item: Mapping[str, Any]) -> Any:
        if id(item) not in self._built:
            self._built[id(item)] = f.data_class(**self.fields(f, item))
        return self._built[id(item)]

    def value(self, f: Any, v: Any) -> Any:
        if v is NULL:
            return None
        if isinstance(v, Seen):
            return self.resolve(v)
        if isinstance(v, Batch | Embedded):
            return v.encode(self.resolve)
        if v is None:
            return None
        if f.is_struct_array():
            return [self.struct(f.array_of, item) for item in v]
        if f.is_struct():
            return self.struct(f, v)
        if f.is_array():
            return [self.value(f.array_of, x) for x in v]
        return v


# -- strategies -------------------------------------------------------------------------------------

# Arrays at the top level of a request may repeat an element up to Scale.max_repeat times; the arrays
# inside a repeated element at most SMALL_REPEAT times (a request stays a few MB at most).
BIG, SMALL = "big", "small"
SMALL_REPEAT = 10


def _ints(kind: str, hints: Sequence[int] = ()) -> st.SearchStrategy[int]:
    lo, hi = INT_EXTREMES[kind]
    extremes = [x for x in (0, -1, 1, lo, hi, lo + 1, hi - 1, 2**31 - 1, -(2**31)) if lo <= x <= hi]
    branches = [st.sampled_from(extremes), st.integers(max(lo, -2), min(hi, 5)), st.integers(lo, hi)]
    if hints:
        branches.insert(0, st.sampled_from([h for h in hints if lo <= h <= hi]))
    return st.one_of(branches)


def _seen(pool: str) -> st.SearchStrategy[Seen]:
    return st.builds(Seen, st.just(pool), st.integers(0, 3))


_INT_HINTS: dict[str, tuple[int, ...]] = {
    "partition_index": (0, 1, 2, 3),
    "partition": (0, 1, 2, 3),
    "partitions": (0, 1, 2, 3),
    "index": (0, 1, 2),
    "acks": (-1, 0, 1, 2, 5),
    "num_partitions": (1, 2, 3, 100, 1000),
    "replication_factor": (1, 3),
    "count": (1, 2, 4, 100, 1000),
    "isolation_level": (0, 1, 2),
    "key_type": (0, 1, 2),
    "resource_type": (0, 1, 2, 3, 4, 5, 6, 7),
    "resource_type_filter": (1, 2, 3, 4, 5),
    "resource_pattern_type": (1, 2, 3, 4),
    "pattern_type_filter": (1, 2, 3, 4),
    "operation": (1, 2, 3, 4, 5, 6, 7, 8, 9, 12),
    "permission_type": (1, 2, 3),
    "config_operation": (0, 1, 2, 3),
    "session_timeout_ms": (6000, 10_000, 45_000),
    "rebalance_timeout_ms": (100, 1000, 60_000),
    "max_wait_ms": (0, 10, 500),
    "timeout_ms": (0, 100, 1000, 30_000),
    "transaction_timeout_ms": (1, 1000, 60_000),
    "min_bytes": (0, 1, 1000),
    "max_bytes": (0, 1, 100, 1 << 20),
    "partition_max_bytes": (0, 1, 100, 1 << 20),
    "replica_id": (-1, 0, 1),
    "timestamp": (-1, -2, -3, -4, -5),
    "max_num_offsets": (1, 2),
}


@dataclass(frozen=True)
class _Spot:
    """Where a field is drawn: its API and version, the struct it belongs to, and its repeat level."""

    api: str
    version: int
    flexible: bool
    parent: str
    level: str

    def inside(self, parent: str, level: str | None = None) -> _Spot:
        return _Spot(self.api, self.version, self.flexible, parent, level or self.level)


class _Strategies:
    """The strategy of every field, built once per (API, version, field, repeat level) and cached: a
    strategy built inside a draw would cost more than the draw. Inside an element repeated more than
    SMALL_REPEAT times, strings and bytes stay short: huge counts and huge values are drawn, but not
    multiplied (frames stay below socket.request.max.bytes, which the damaged frames test)."""

    def __init__(self, names: Names, scale: Scale) -> None:
        self.names = names
        self.scale = scale
        self._cache: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}
        self._topics = (*names.topics, *INTERNAL_TOPICS)

    def _longest(self, at: _Spot, limit: int) -> int:
        return limit if at.level == BIG else 64

    def text(self, at: _Spot) -> st.SearchStrategy[str]:
        longest = self._longest(
            at, self.scale.max_string if at.flexible else min(self.scale.max_string, 2**15 - 1)
        )
        return st.one_of(
            st.text(max_size=12),
            st.sampled_from(["", "\n", "\x00", " ", "\u202e", "%s%n", "../..", "x" * longest]),
            st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=64),
        )

    def pooled(self, pool: Sequence[str], at: _Spot, *, guarded: bool = False) -> st.SearchStrategy[str]:
        """Mostly a known name (the requests then reach the broker's state), sometimes a hostile one;
        `guarded` names (topics, groups) are also often the ones the tenant is denied: among the known
        ones, the control topic came up in 1 DeleteRecords in 75, and none that would delete."""
        known = st.sampled_from(list(pool))
        branches = [known, known, st.sampled_from(list(HOSTILE_NAMES)), self.text(at)]
        if guarded and self.names.forbidden:
            branches.insert(2, st.sampled_from(list(self.names.forbidden)))
        return st.one_of(branches)

    def string(self, f: Any, at: _Spot) -> st.SearchStrategy[Any]:
        n, entity, names, parent = f.name, f._entity_type, self.names, at.parent
        if entity == "topicName" or n in ("topic", "topic_names"):
            return self.pooled(self._topics, at, guarded=True)
        if entity == "groupId" or n in ("groups", "groups_names", "coordinator_keys"):
            return self.pooled((*names.groups, *names.transactional_ids), at, guarded=True)
        if entity == "transactionalId" or n in ("transactional_ids", "transactional_id_pattern"):
            return self.pooled(names.transactional_ids, at)
        if n in ("resource_name", "resource_name_filter", "entity_name"):
            return self.pooled((*self._topics, *names.groups, "kafka-cluster", "0", "*"), at, guarded=True)
        if n in ("principal", "principal_filter"):
            return self.pooled(PRINCIPALS, at)
        if n == "mechanism":
            return self.pooled(MECHANISMS, at)
        if n == "member_id":
            return st.one_of(_seen("member_id"), _seen("member_id"), self.text(at))
        if n in ("protocol_type", "protocol_name"):
            return self.pooled(("consumer", "range", "roundrobin", "cooperative-sticky"), at)
        if "Config" in parent and n in ("name", "configuration_keys"):
            return self.pooled(CONFIG_NAMES, at)
        if "Config" in parent and n == "value":
            return self.pooled(CONFIG_VALUES, at)
        if n == "name":  # the topic of most requests that do not tag it with an entityType
            return self.pooled(self._topics, at, guarded=True)
        return self.text(at)

    def int(self, f: Any, kind: str) -> st.SearchStrategy[Any]:
        plain = _ints(kind, _INT_HINTS.get(f.name, ()))
        if f.name in REUSED or f._entity_type == "producerId":
            return st.one_of(plain, _seen(REUSED.get(f.name, "producer_id")))
        return plain

    def bytes(self, f: Any, at: _Spot) -> st.SearchStrategy[Any]:
        plain = st.one_of(
            st.just(b""),
            st.binary(max_size=32),
            st.integers(0, self._longest(at, self.scale.max_bytes)).map(lambda k: b"\xff" * k),
        )
        if f.name == "auth_bytes" and self.names.sasl_tokens:
            return st.one_of(st.sampled_from(list(self.names.sasl_tokens)), plain)
        if f.name == "metadata" and at.api == "JoinGroup":
            return st.one_of(self.embedded(ConsumerProtocolSubscription, at), plain)
        if f.name == "assignment" and at.api == "SyncGroup":
            return st.one_of(self.embedded(ConsumerProtocolAssignment, at), plain)
        return plain

    def embedded(self, message: Any, at: _Spot) -> st.SearchStrategy[Embedded]:
        def at_version(v: int) -> st.SearchStrategy[Embedded]:
            spot = _Spot(at.api, v, False, message.__name__, SMALL)
            return self.struct(message._struct, spot).map(lambda b: Embedded(message, v, b))

        return st.one_of([at_version(v) for v in range(message.max_version + 1)])

    def records(self, at: _Spot) -> st.SearchStrategy[Any]:
        scale = self.scale
        batch = st.builds(
            Batch,
            count=st.one_of(st.integers(1, 3), st.integers(0, scale.max_records)),
            value_size=st.one_of(
                st.integers(0, 16), st.sampled_from([0, self._longest(at, scale.max_bytes)])
            ),
            compression=st.integers(0, 4),
            producer_id=st.one_of(st.just(-1), _seen("producer_id"), _ints("int64")),
            producer_epoch=st.one_of(st.just(-1), _seen("producer_epoch"), _ints("int16")),
            base_sequence=st.one_of(st.just(-1), _ints("int32")),
            transactional=st.booleans(),
        )
        return st.one_of(batch, batch, st.binary(max_size=64))

    def simple(self, f: Any, at: _Spot) -> st.SearchStrategy[Any]:
        kind = f.type_str.removeprefix("[]")
        if kind in INT_EXTREMES:
            return self.int(f, kind)
        if kind == "bool":
            return st.booleans()
        if kind == "float64":
            return st.one_of(st.sampled_from([0.0, -1.0, float("inf"), float("nan")]), st.floats())
        if kind == "uuid":
            return st.one_of(st.just(uuid.UUID(int=0)), st.uuids(), _seen("topic_id"))
        if kind == "string":
            return self.string(f, at)
        if kind == "records":
            return self.records(at)
        if kind == "bytes":
            return self.bytes(f, at)
        raise AssertionError(f"no strategy for {at.api} field {f.name} of type {f.type_str}")

    def array(
        self, element: Callable[[str], st.SearchStrategy[Any]], at: _Spot, nullable: bool
    ) -> st.SearchStrategy[Any]:
        """Empty, null, a few elements, or one or two elements repeated many times (the repeats share
        the drawn elements, so a 20,000-entry request costs two draws)."""
        top = self.scale.max_repeat if at.level == BIG else SMALL_REPEAT
        repeats = [r for r in REPEATS if r <= top]

        def repeated(n: int) -> st.SearchStrategy[list[Any]]:
            distinct = st.lists(element(SMALL if n > SMALL_REPEAT else at.level), min_size=1, max_size=2)
            return distinct.map(lambda d: [d[i % len(d)] for i in range(n)])

        branches: list[st.SearchStrategy[list[Any] | None]] = [
            st.just([]),
            st.lists(element(at.level), min_size=1, max_size=3),
            st.sampled_from(repeats).flatmap(repeated),
        ]
        if nullable:
            branches.append(st.none())
        return st.one_of(branches)

    def field(self, f: Any, at: _Spot) -> st.SearchStrategy[Any]:
        key = (id(f), at)
        if key not in self._cache:
            self._cache[key] = st.deferred(lambda: self._field(f, at))
        return self._cache[key]

    def _field(self, f: Any, at: _Spot) -> st.SearchStrategy[Any]:
        nullable = f.nullable_for_version_q(at.version)
        if f.is_struct_array():
            inner = f.array_of
            return self.array(
                lambda level: self.struct(inner, at.inside(inner.type_str, level)), at, nullable
            )
        if f.is_array():
            return self.array(lambda level: self.simple(f, at.inside(at.parent, level)), at, nullable)
        s = self.struct(f, at.inside(f.type_str)) if f.is_struct() else self.simple(f, at)
        return st.one_of(st.none(), s) if nullable else s

    def struct(self, struct: Any, at: _Spot) -> st.SearchStrategy[dict[str, Any]]:
        fields = {}
        for f in struct._fields:
            if not f.for_version_q(at.version):
                continue
            s = self.field(f, at)
            # Tagged fields are optional: sometimes sent, else left out.
            fields[f.name] = st.one_of(st.just(_ABSENT), s) if f.tagged_field_q(at.version) else s
        return st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not _ABSENT})


_ABSENT = object()


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    """Up to four byte-level changes: a flipped byte, a cut, inserted bytes, a lying size prefix, another
    API key or version in the header."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "size", "api_key", "api_version"]))
        steps.append((kind, draw(st.integers(0, 2**16)), draw(_ints("int32"))))
    return Mutation(tuple(steps))


def _null_spots(struct: Any, body: Mapping[str, Any], version: int, path: str) -> list[tuple[Any, str, str]]:
    """Where a NULL may replace a drawn value the schema says is not nullable: (dict, key, path)."""
    spots = []
    for name, value in body.items():
        f = struct.fields[name]
        where = f"{path}.{name}" if path else name
        if f.is_struct_array() and value:
            spots += _null_spots(f.array_of, value[0], version, f"{where}[0]")
        elif f.is_struct() and isinstance(value, Mapping):
            spots += _null_spots(f, value, version, where)
        if not f.nullable_for_version_q(version) and (
            f.is_array() or f.type_str in ("string", "bytes", "records")
        ):
            spots.append((body, name, where))
    return spots


def requests(
    apis: Mapping[int, tuple[int, int]], names: Names, scale: Scale
) -> st.SearchStrategy[HostileRequest]:
    """Requests for the advertised `apis` (API key -> (min, max) version): an API (those of DATA_PATH
    three times as likely), a version, a body; about one in 8 with a null where the schema forbids one."""
    build = _Strategies(names, scale)
    bodies: dict[tuple[int, int], st.SearchStrategy[dict[str, Any]]] = {}
    for key, (lo, hi) in apis.items():
        cls = messages_for(key).request
        api = str(cls.name).removesuffix("Request")
        for v in range(lo, hi + 1):
            bodies[key, v] = build.struct(cls._struct, _Spot(api, v, cls.flexible_version_q(v), api, BIG))
    # The data path (and what a tenant's clients send most) three times as often as the admin APIs: a
    # uniform draw over 40-odd APIs sent about one Fetch in 170 requests, too few to park one.
    keys = [k for k in sorted(apis) for _ in range(3 if k in DATA_PATH else 1)]

    # A composite (not .map) so that Hypothesis prints a failing request with HostileRequest's own
    # compact repr.
    @st.composite
    def draw(draw: st.DrawFn) -> HostileRequest:
        key = draw(st.sampled_from(keys))
        version = draw(st.integers(*apis[key]))
        body = draw(bodies[key, version])
        if draw(st.integers(0, 7)) == 7:
            body = copy.deepcopy(body)  # drawn values are not ours to change (repeats stay shared)
            spots = _null_spots(messages_for(key).request._struct, body, version, "")
            if spots:
                container, name, where = draw(st.sampled_from(spots))
                container[name] = NULL
                return HostileRequest(key, version, body, forbidden_null=where)
        return HostileRequest(key, version, body)

    return draw()
