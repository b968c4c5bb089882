"""Produce: v0-12 advertised, v3-12 served (API key 0)

Behaviour:
- v0-2 are advertised and answered with UNSUPPORTED_VERSION per partition, as Kafka 4 does
  (KAFKA-18659): librdkafka before 2.11.1 drops compression unless Produce v0 is advertised.
- Each partition's batch goes to the engine, which validates it record by record as Kafka's
  LogValidator does (one batch per partition, CRC-32C, count, record structure, offset deltas, keys
  on compacted topics, timestamps against message.timestamp.{before,after}.max.ms, bounded
  decompression), assigns the offsets itself, applies the topic's compression.type and checks
  idempotent sequences; errors are per partition.
- Refused records are named (KIP-467): INVALID_RECORD or INVALID_TIMESTAMP with `record_errors`
  (batch index and message per culprit record) and an `error_message`; other refusals carry an
  `error_message` too.
- A request carrying at least 256 KiB of records has them validated on a worker thread (the record
  walk, decompression and CRC: about 0.2 s for 19 MB), so the event loop goes on serving every
  other client meanwhile; the checks and appends then run on the loop as for any request.
- acks=0 gets no response. acks=1 and acks=-1 are the same on one node (the append is done
  before the response; durability follows log.flush.interval.messages like Kafka). Any other acks
  gets INVALID_REQUIRED_ACKS on every partition, nothing appended, as Kafka's ReplicaManager.
- Internal topics (`__consumer_offsets`, `__transaction_state`) are written by their coordinators
  only: a client's batch for them gets INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic"),
  as Kafka's ReplicaManager answers. Kafka lets a client whose client id is `__admin_client` through;
  Ebb lets no client through (a forged OffsetCommit record would move another group's offsets).
- Unknown topics answer UNKNOWN_TOPIC_OR_PARTITION (clients create them through Metadata).
- Transactional produce (KIP-98): each partition must be in the producer's ongoing transaction
  (AddPartitionsToTxn) with its current epoch, as Kafka's transaction verification checks (KIP-890):
  INVALID_TXN_STATE, PRODUCER_FENCED or INVALID_PRODUCER_ID_MAPPING per partition otherwise. The
  batches then open (or continue) the producer's transaction in the log.
- Client quotas (KIP-13, KIP-219): the request's size counts against the client's
  `producer_byte_rate` (quota/manager.py); over it, the answer carries `throttle_time_ms` and the
  connection is muted for that long (an acks=0 producer gets no answer but is muted all the same).
- Authorization (Kafka's KafkaApis): a request holding transactional batches needs a transactional id
  and WRITE on it (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each TOPIC
  (else its partitions TOPIC_AUTHORIZATION_FAILED, nothing appended); no IDEMPOTENT_WRITE check
  (KIP-679).

Version notes:
- v2: log append time. v3: transactional id, v2 batches only. v5: log start offset.
- v7: zstd (KIP-110); a zstd batch in v3-6 gets UNSUPPORTED_COMPRESSION_TYPE, as in Kafka.
- v8: record errors and error message (KIP-467). v9: flexible. v10-12: current leader / node endpoints
  (tagged, left empty). v13 (topic ids) is not advertised.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.errors import (
    InvalidRequiredAcksError,
    InvalidTopicError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedVersionError,
)
from kafka.protocol.producer.produce import ProduceRequest

from ebb_broker.log import Log
from ebb_broker.log.errors import LogError, RecordValidationError
from ebb_broker.log.validator import ValidatedBatch
from ebb_broker.protocol.authz import (
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, has_partition
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator
from ebb_broker.quota.manager import user_of
from ebb_formats.record_batch import HEADER_SIZE, TRANSACTIONAL_MASK, read_header

API_KEY = 0
FIRST_SERVED_VERSION = 3
FIRST_ZSTD_VERSION = 7  # KIP-110
ZSTD = 4
# Records of a request from which validation runs off the event loop (below it, the thread hop costs
# more than the few milliseconds of validation it would save the other clients).
OFF_LOOP_BYTES = 256 * 1024
VALID_ACKS = (-1, 0, 1)  # Kafka's ReplicaManager.isValidRequiredAcks


def _codec(records: bytes | None) -> int:
    """The compression codec of the batch's attributes (-1 when there is no header to read)."""
    return records[22] & 0x07 if records is not None and len(records) > 22 else -1


def _is_transactional(records: bytes | None) -> bool:
    """The batch's transactional attribute (False when there is no header to read)."""
    return records is not None and len(records) > 22 and bool(records[22] & TRANSACTIONAL_MASK)


def _has_transactional_records(request: ProduceRequest) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords."""
    return any(_is_transactional(p.records) for t in request.topic_data for p in t.partition_data)


async def handle(ctx: RequestContext, request: ProduceRequest) -> Any:
    broker = ctx.broker
    cls = ctx.response_class
    T = cls.TopicProduceResponse
    P = T.PartitionProduceResponse
    refuse: tuple[int, str] | None = None
    if ctx.api_version < FIRST_SERVED_VERSION:
        refuse = (UnsupportedVersionError.errno, "Produce v0-2 (message format v0/v1) is not supported")
    elif _has_transactional_records(request) and (
        request.transactional_id is None
        or not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id)
    ):
        refuse = (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "WRITE on the transactional id is not allowed")
    unwritable = denied(ctx, Op.WRITE, TOPIC, (t.name for t in request.topic_data))
    validated = {} if refuse is not None else await _validate_off_loop(ctx, request, unwritable)
    topics = broker.logs.topics()  # after the wait: what exists now
    responses = []
    appended: list[tuple[str, int]] = []
    for ti, t in enumerate(request.topic_data):
        parts = []
        for pi, p in enumerate(t.partition_data):
            err, msg, base, append_time, start = 0, None, -1, -1, -1
            record_errors: list[Any] = []
            if refuse is not None:
                err, msg = refuse
            elif t.name in unwritable:
                err = TOPIC_AUTHORIZATION_FAILED
            elif not has_partition(topics, t.name, p.index):
                err = UnknownTopicOrPartitionError.errno
            elif ctx.api_version < FIRST_ZSTD_VERSION and _codec(p.records) == ZSTD:
                err, msg = UnsupportedCompressionTypeError.errno, "zstd needs Produce v7 or later"
            elif request.acks not in VALID_ACKS:
                err, msg = InvalidRequiredAcksError.errno, f"acks must be -1, 0 or 1, got {request.acks}"
            elif t.name in INTERNAL_TOPICS:  # Kafka's ReplicaManager, without the __admin_client exception
                err, msg = InvalidTopicError.errno, f"Cannot append to internal topic {t.name}"
            elif request.transactional_id is not None and (
                txn_error := _verify_transactional(ctx, request.transactional_id, t.name, p.index, p.records)
            ):
                # the produce path reports a stale epoch as INVALID_PRODUCER_EPOCH, as Kafka's does
                err = fenced_as(txn_error, 0, 1)
                msg = "the partition is not part of the producer's ongoing transaction"
            else:
                try:
                    checked = validated.get((ti, pi))
                    if isinstance(checked, LogError):
                        raise checked
                    info = broker.logs.get_log(t.name, p.index).append(checked or p.records or b"")
                    base, append_time, start = info.base_offset, info.log_append_time, info.log_start_offset
                    appended.append((t.name, p.index))
                except RecordValidationError as exc:  # KIP-467: name the refused records
                    err, msg = error_code(exc), str(exc)
                    record_errors = [
                        P.BatchIndexAndErrorMessage(
                            batch_index=e.batch_index, batch_index_error_message=e.message
                        )
                        for e in exc.record_errors
                    ]
                except LogError as exc:
                    err, msg = error_code(exc), str(exc)
            parts.append(
                P(
                    index=p.index,
                    error_code=err,
                    base_offset=base,
                    log_append_time_ms=append_time,
                    log_start_offset=start,
                    record_errors=record_errors,
                    error_message=msg,
                )
            )
        responses.append(T(name=t.name, partition_responses=parts))
    broker.fetches.complete(appended)
    # KIP-13: the request's bytes count against the client's producer_byte_rate, whatever was appended.
    ctx.throttle_ms = broker.quotas.produce.record(
        user_of(ctx.session.principal), ctx.client_id or "", ctx.request_size
    )
    if request.acks == 0:
        return None  # still muted for the throttle time, as Kafka mutes an acks=0 producer
    return ctx.response(responses=responses, throttle_time_ms=ctx.throttle_ms)


async def _validate_off_loop(
    ctx: RequestContext, request: ProduceRequest, unwritable: set[str]
) -> dict[tuple[int, int], ValidatedBatch | LogError]:
    """Validate a large request's batches on a worker thread (pure work on bytes: no lock, no state),
    keyed by their place in the request; {} for a small one, validated inline by the append as usual."""
    topics = ctx.broker.logs.topics()
    jobs: list[tuple[tuple[int, int], Log, bytes]] = []
    for ti, t in enumerate(request.topic_data):
        for pi, p in enumerate(t.partition_data):
            if p.records and t.name not in unwritable and has_partition(topics, t.name, p.index):
                jobs.append(((ti, pi), ctx.broker.logs.get_log(t.name, p.index), p.records))
    if sum(len(records) for *_, records in jobs) < OFF_LOOP_BYTES:
        return {}

    def validate_all() -> dict[tuple[int, int], ValidatedBatch | LogError]:
        out: dict[tuple[int, int], ValidatedBatch | LogError] = {}
        for key, plog, records in jobs:
            try:
                out[key] = plog.validate(records)
            except LogError as exc:
                out[key] = exc
        return out

    return await asyncio.to_thread(validate_all)


def _verify_transactional(
    ctx: RequestContext, transactional_id: str, topic: str, partition: int, records: Any
) -> int:
    """Kafka's transaction verification of a transactional batch (0: the write may go ahead; batches
    that are not transactional are not verified, as in Kafka)."""
    data = bytes(records or b"")
    if len(data) < HEADER_SIZE:
        return 0  # the engine refuses what is not a batch
    header = read_header(data)
    if not header.is_transactional:
        return 0
    return transaction_coordinator(ctx).verify(
        transactional_id, header.producer_id, header.producer_epoch, (topic, partition)
    )


register(API_KEY, 0, 12, handle, rejected_below=FIRST_SERVED_VERSION)
