"""The only code that talks to Kafka-protocol clusters (Ebb brokers and Apache Kafka alike).

It knows no Kubernetes: callers hand it bootstrap servers and client properties and get typed results.
"""

from __future__ import annotations

from ebb_operator.kafka.admin import EARLIEST, LATEST, UNKNOWN_BROKER, ClusterAdmin
from ebb_operator.kafka.connection import (
    ALLOWED_PROPERTIES,
    ClusterConfigError,
    ClusterConnection,
    ForbiddenPropertyError,
)
from ebb_operator.kafka.offset_fetch import TopicCommits
from ebb_operator.kafka.pool import AdminPool
from ebb_operator.kafka.results import (
    ClusterMetadata,
    ConfigValue,
    DeleteRecordsResult,
    GroupDescription,
    GroupListing,
    GroupMember,
    KafkaCallError,
    KafkaFailure,
    OffsetResult,
    QuotaEntity,
    TopicConfigs,
    TopicMetadata,
    TopicPartition,
)

__all__ = [
    "ALLOWED_PROPERTIES",
    "EARLIEST",
    "LATEST",
    "UNKNOWN_BROKER",
    "AdminPool",
    "ClusterAdmin",
    "ClusterConfigError",
    "ClusterConnection",
    "ClusterMetadata",
    "ConfigValue",
    "DeleteRecordsResult",
    "ForbiddenPropertyError",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "KafkaCallError",
    "KafkaFailure",
    "OffsetResult",
    "QuotaEntity",
    "TopicCommits",
    "TopicConfigs",
    "TopicMetadata",
    "TopicPartition",
]
