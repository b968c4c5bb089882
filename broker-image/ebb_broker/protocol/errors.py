"""The one mapping from log-engine exceptions to Kafka error codes (kafka-python's error table).

Handlers catch `LogError` per partition and answer with `error_code(exc)`, so one bad partition
never fails a request (franz-go kfake's per-partition errors; Kafka's ReplicaManager does the same).
"""

from __future__ import annotations

from kafka import errors as E

from ebb_broker.log import errors as L

_CODES: list[tuple[type[Exception], int]] = [
    (L.CorruptRecordError, E.CorruptRecordError.errno),
    (L.InvalidRecordError, E.InvalidRecordError.errno),
    (L.InvalidTimestampError, E.InvalidTimestampError.errno),
    (L.RecordTooLargeError, E.MessageSizeTooLargeError.errno),
    (L.OffsetOutOfRangeError, E.OffsetOutOfRangeError.errno),
    (L.PolicyViolationError, E.PolicyViolationError.errno),
    (L.DuplicateSequenceError, E.DuplicateSequenceNumberError.errno),
    (L.OutOfOrderSequenceError, E.OutOfOrderSequenceNumberError.errno),
    (L.InvalidProducerEpochError, E.InvalidProducerEpochError.errno),
    (L.TransactionCoordinatorFencedError, E.TransactionCoordinatorFencedError.errno),
    (L.UnknownTopicOrPartitionError, E.UnknownTopicOrPartitionError.errno),
    (L.TopicExistsError, E.TopicAlreadyExistsError.errno),
    (L.InvalidTopicError, E.InvalidTopicError.errno),
    (L.InvalidConfigError, E.InvalidConfigurationError.errno),
    (L.InvalidPartitionsError, E.InvalidPartitionsError.errno),
    (L.PartitionLimitError, E.PolicyViolationError.errno),
]


def error_code(exc: Exception) -> int:
    """Kafka's error code for an engine exception; UNKNOWN_SERVER_ERROR for anything else."""
    if isinstance(exc, L.RecordValidationError):  # KIP-467: the batch fails with its cause's code
        exc = exc.cause
    for cls, code in _CODES:
        if isinstance(exc, cls):
            return code
    return E.UnknownError.errno
