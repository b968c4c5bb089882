"""The log engine: Kafka-format partition logs, retention, consumed retention (KIP-68) and the cleaner.

Its public names are below (docs/broker-internals.md lists them with their signatures); errors live in
``ebb_broker.log.errors``. The engine imports nothing else of the broker (an import-linter contract):
the protocol and the coordinator call it, and the broker's settings reach it as a ``LogManagerConfig``.
"""

from __future__ import annotations

from ebb_broker.log.cleaner_manager import CleanerReport
from ebb_broker.log.log import (
    AppendInfo,
    FetchSlice,
    Log,
    LogStartMove,
    LogStartOffsetIncrementReason,
    ReadResult,
    RecordsDeleted,
)
from ebb_broker.log.log_config import LogConfig, LogManagerConfig
from ebb_broker.log.log_manager import LogManager, NewTopic, RetentionReport, TopicMetadata
from ebb_broker.log.retention import CommittedOffsets

__all__ = [
    "AppendInfo",
    "CleanerReport",
    "CommittedOffsets",
    "FetchSlice",
    "Log",
    "LogConfig",
    "LogManager",
    "LogManagerConfig",
    "LogStartMove",
    "LogStartOffsetIncrementReason",
    "NewTopic",
    "ReadResult",
    "RecordsDeleted",
    "RetentionReport",
    "TopicMetadata",
]
