"""The only code that talks to Kafka-protocol clusters (Ebb brokers and Apache Kafka alike).

It knows no Kubernetes: callers hand it bootstrap servers and client properties and get typed results.
"""

from __future__ import annotations

from ebb_operator.kafka.admin import EARLIEST, LATEST, ClusterAdmin
from ebb_operator.kafka.connection import ClusterConfigError, ClusterConnection
from ebb_operator.kafka.results import (
    ClusterMetadata,
    ConfigValue,
    DeleteRecordsResult,
    GroupDescription,
    GroupListing,
    GroupMember,
    KafkaFailure,
    OffsetResult,
    TopicConfigs,
    TopicMetadata,
    TopicPartition,
)

__all__ = [
    "EARLIEST",
    "LATEST",
    "ClusterAdmin",
    "ClusterConfigError",
    "ClusterConnection",
    "ClusterMetadata",
    "ConfigValue",
    "DeleteRecordsResult",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "KafkaFailure",
    "OffsetResult",
    "TopicConfigs",
    "TopicMetadata",
    "TopicPartition",
]
