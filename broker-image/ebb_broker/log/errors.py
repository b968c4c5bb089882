"""Errors of the log engine; each maps to one Kafka error code in the protocol layer.

It imports nothing, so every other module of the engine (and the broker's own configuration) can.
"""

from __future__ import annotations


class LogError(Exception):
    """Base class of every error the engine raises on purpose."""


class CorruptRecordError(LogError):
    """Bad magic, CRC or framing in a produced batch (CORRUPT_MESSAGE)."""


class InvalidRecordError(LogError):
    """A well-formed batch the topic refuses, e.g. a keyless record on a compacted topic (INVALID_RECORD)."""


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes or segment.bytes (MESSAGE_TOO_LARGE)."""


class OffsetOutOfRangeError(LogError):
    """A read or delete outside [log start offset, LEO/HW] (OFFSET_OUT_OF_RANGE)."""


class PolicyViolationError(LogError):
    """DeleteRecords on a topic whose cleanup.policy lacks ``delete`` (POLICY_VIOLATION)."""


class DuplicateSequenceError(LogError):
    """A duplicate that is no longer among the producer's cached batches (DUPLICATE_SEQUENCE_NUMBER)."""


class OutOfOrderSequenceError(LogError):
    """An idempotent batch whose sequence does not follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER)."""


class InvalidProducerEpochError(LogError):
    """A batch from a fenced (older) producer epoch (INVALID_PRODUCER_EPOCH)."""


class UnknownTopicOrPartitionError(LogError):
    """No such topic or partition in this data directory (UNKNOWN_TOPIC_OR_PARTITION)."""


class TopicExistsError(LogError):
    """create_topic on a name that exists (TOPIC_ALREADY_EXISTS)."""


class InvalidConfigError(LogError, ValueError):
    """An unknown config key or a bad value (INVALID_CONFIG); the message names the key."""


class UnsupportedFeatureError(LogError):
    """A request for a feature this engine does not implement (transactions): refused, never faked."""


class CorruptIndexError(LogError):
    """An index file that fails its sanity check; recovery rebuilds it from the .log."""


class CorruptCheckpointError(LogError):
    """A checkpoint file with a wrong version, a malformed line or a count that does not match."""


class InvalidPartitionsError(LogError):
    """create_partitions with a count that does not grow the topic (INVALID_PARTITIONS)."""


class PartitionLimitError(LogError):
    """Creating partitions past max.partitions or the descriptor limit (POLICY_VIOLATION); nothing written."""
