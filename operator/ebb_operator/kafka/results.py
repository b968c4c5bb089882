"""Typed results of cluster calls: plain dataclasses, no client types leak out of `ebb_operator.kafka`.

Batched calls return a result or a failure per item (Strimzi's PartitionedByError), never raise for
one bad partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class KafkaFailure:
    """A Kafka error code by name (e.g. OFFSET_OUT_OF_RANGE), its text, and whether a retry may help."""

    code: str
    message: str
    retriable: bool

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message and self.message != self.code else self.code


class KafkaCallError(RuntimeError):
    """A call that answers for one item failed as a whole; `failure` says how (Kafka's error name)."""

    def __init__(self, failure: KafkaFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    partitions: tuple[int, ...]
    error: KafkaFailure | None = None


@dataclass(frozen=True)
class ClusterMetadata:
    brokers: tuple[int, ...]
    topics: dict[str, TopicMetadata]


@dataclass(frozen=True)
class OffsetResult:
    """An offset from ListOffsets, or the failure for that partition."""

    offset: int | None
    error: KafkaFailure | None = None


@dataclass(frozen=True)
class DeleteRecordsResult:
    """KIP-107: the new low watermark (log start offset) of a partition, or the failure."""

    low_watermark: int | None
    error: KafkaFailure | None = None


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    type: str = "classic"  # ListGroups v5 (KIP-848): classic, consumer, share, streams; classic before it

    @property
    def is_share(self) -> bool:
        """A share group (KIP-932): no commits; its consumed level is its start offset per partition."""
        return self.type == "share"


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    subscription: tuple[str, ...] = ()  # the topics the member subscribed to (it may have no partition yet)


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    members: tuple[GroupMember, ...] = field(default_factory=tuple)
    error: KafkaFailure | None = None


@dataclass(frozen=True)
class ConfigValue:
    value: str | None
    source: str
    is_default: bool


@dataclass(frozen=True)
class TopicConfigs:
    """All configs DescribeConfigs returns for a topic (defaults included), or the failure."""

    configs: dict[str, ConfigValue]
    error: KafkaFailure | None = None

    def supports(self, name: str) -> bool:
        """Capability probe: the cluster knows a topic config iff DescribeConfigs lists it."""
        return name in self.configs


USER_ENTITY = "user"
CLIENT_ID_ENTITY = "client-id"
_ABSENT: Any = object()


@dataclass(frozen=True, order=True)
class QuotaEntity:
    """A client quota entity (KIP-546): entity type -> name, a name of None meaning the type's default
    (`kafka-configs --entity-default`). `QuotaEntity.of(client_id="app")`,
    `QuotaEntity.of(user="alice", client_id=None)` (alice's default client)."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, *, user: str | None = _ABSENT, client_id: str | None = _ABSENT) -> QuotaEntity:
        pairs = {USER_ENTITY: user, CLIENT_ID_ENTITY: client_id}
        return cls(tuple(sorted((t, n) for t, n in pairs.items() if n is not _ABSENT)))

    def __str__(self) -> str:
        return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in self.parts)
