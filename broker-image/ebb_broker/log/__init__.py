"""The log engine: Kafka-format partition logs, retention, consumed retention (KIP-68) and the cleaner.

Public names (the contract in docs/broker-internals.md): ``LogManager``, ``Log``, ``AppendInfo``,
``FetchSlice``, ``ReadResult``, ``CommittedOffsetProvider``; errors live in ``ebb_broker.log.errors``.
They are loaded lazily so that ``ebb_broker.config`` can import ``ebb_broker.log.errors`` without
pulling in the engine (which itself imports the config).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ebb_broker.log.cleaner_manager import CleanerReport
    from ebb_broker.log.log import AppendInfo, FetchSlice, Log, LogStartOffsetIncrementReason, ReadResult
    from ebb_broker.log.log_manager import LogManager, RetentionReport, TopicMetadata
    from ebb_broker.log.retention import CommittedOffsetProvider

_EXPORTS = {
    "LogManager": "log_manager",
    "TopicMetadata": "log_manager",
    "RetentionReport": "log_manager",
    "Log": "log",
    "AppendInfo": "log",
    "FetchSlice": "log",
    "ReadResult": "log",
    "LogStartOffsetIncrementReason": "log",
    "CommittedOffsetProvider": "retention",
    "CleanerReport": "cleaner_manager",
}

__all__ = [
    "AppendInfo",
    "CleanerReport",
    "CommittedOffsetProvider",
    "FetchSlice",
    "Log",
    "LogManager",
    "LogStartOffsetIncrementReason",
    "ReadResult",
    "RetentionReport",
    "TopicMetadata",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ebb_broker.log' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ebb_broker.log.{module}"), name)
