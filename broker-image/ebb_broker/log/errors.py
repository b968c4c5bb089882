"""Errors of the log engine; each maps to one Kafka error code in the protocol layer.

It imports nothing, so every other module of the engine (and the broker's own configuration) can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SHOWN_CHARACTERS = 256  # a legal topic name (249 characters) shows whole
SHOWN_ITEMS = 10


def shown(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """How a value a client sent appears in a message (the error it gets back, a log line): its repr, cut
    after ``limit`` characters with its length said, so a hostile request cannot make the broker echo or
    log megabytes. The broker's one truncation of messages (`shown_all` for lists)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def shown_all(items: Sequence[str], limit: int = SHOWN_ITEMS, separator: str = ", ") -> str:
    """The first ``limit`` items, joined, and how many more there are."""
    head = separator.join(items[:limit])
    return head if len(items) <= limit else f"{head}{separator}... ({len(items) - limit} more)"


class LogError(Exception):
    """Base class of every error the engine raises on purpose."""


class CorruptRecordError(LogError):
    """Bad magic, CRC, framing or compressed data in a produced batch (CORRUPT_MESSAGE)."""


class InvalidRecordError(LogError):
    """A batch or record the validator refuses: a count that does not match its records, a malformed
    record, a keyless record on a compacted topic (INVALID_RECORD)."""


class InvalidTimestampError(LogError):
    """A record timestamp outside message.timestamp.{before,after}.max.ms of now (INVALID_TIMESTAMP)."""


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record (KIP-467): its position in the batch and why."""

    batch_index: int
    message: str


class RecordValidationError(LogError):
    """Records of a batch refused one by one (Kafka's RecordValidationException, KIP-467): the batch fails
    with the code of ``cause`` (INVALID_RECORD or INVALID_TIMESTAMP) and names each culprit record."""

    def __init__(self, cause: InvalidRecordError | InvalidTimestampError, record_errors: list[RecordError]):
        super().__init__(str(cause))
        self.cause = cause
        self.record_errors = record_errors


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes or segment.bytes, or whose records decompress to more than
    max.message.bytes (MESSAGE_TOO_LARGE)."""


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


class TransactionCoordinatorFencedError(LogError):
    """A marker whose coordinator epoch is older than the last marker's (TRANSACTION_COORDINATOR_FENCED)."""


class UnknownTopicOrPartitionError(LogError):
    """No such topic or partition in this data directory (UNKNOWN_TOPIC_OR_PARTITION)."""


class TopicExistsError(LogError):
    """create_topic on a name that exists (TOPIC_ALREADY_EXISTS)."""


class InvalidTopicError(LogError):
    """A topic name that is not legal, or that collides with an existing one (INVALID_TOPIC_EXCEPTION)."""


class InvalidConfigError(LogError, ValueError):
    """An unknown config key or a bad value (INVALID_CONFIG); the message names the key."""


class CorruptIndexError(LogError):
    """An index file that fails its sanity check; recovery rebuilds it from the .log."""


class CorruptCheckpointError(LogError):
    """A checkpoint file with a wrong version, a malformed line or a count that does not match."""


class InvalidPartitionsError(LogError):
    """create_partitions with a count that does not grow the topic (INVALID_PARTITIONS)."""


class PartitionLimitError(LogError):
    """Creating partitions past max.partitions or the descriptor limit (POLICY_VIOLATION); nothing written."""
