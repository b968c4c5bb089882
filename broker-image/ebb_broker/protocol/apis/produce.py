"""Produce: v0-12 advertised, v3-12 served (API key 0)

Behaviour:
- v0-2 are advertised and answered with UNSUPPORTED_VERSION per partition, as Kafka 4 does
  (KAFKA-18659): librdkafka before 2.11.1 drops compression unless Produce v0 is advertised.
- Batches are handed to the engine as received (opaque bytes: it validates header and CRC-32C,
  stamps offsets, checks idempotent sequences); errors are per partition.
- acks=0 gets no response. acks=1 and acks=-1 are the same on one node (the append is done
  before the response; durability follows log.flush.interval.messages like Kafka).
- Unknown topics answer UNKNOWN_TOPIC_OR_PARTITION (clients create them through Metadata).
- Transactional produce (KIP-98): each partition must be in the producer's ongoing transaction
  (AddPartitionsToTxn) with its current epoch, as Kafka's transaction verification checks (KIP-890):
  INVALID_TXN_STATE, PRODUCER_FENCED or INVALID_PRODUCER_ID_MAPPING per partition otherwise. The
  batches then open (or continue) the producer's transaction in the log.

Version notes:
- v2: log append time. v3: transactional id, v2 batches only. v5: log start offset.
- v8: record errors and error message. v9: flexible. v10-12: current leader / node endpoints
  (tagged, left empty). v13 (topic ids) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import UnknownTopicOrPartitionError, UnsupportedVersionError

from ebb_broker.log.errors import LogError
from ebb_broker.log.records import HEADER_SIZE, read_header
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator

API_KEY = 0
FIRST_SERVED_VERSION = 3


async def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = ctx.response_class
    T = cls.TopicProduceResponse
    P = T.PartitionProduceResponse
    refuse: tuple[int, str] | None = None
    if ctx.api_version < FIRST_SERVED_VERSION:
        refuse = (UnsupportedVersionError.errno, "Produce v0-2 (message format v0/v1) is not supported")
    topics = broker.logs.topics()
    responses = []
    appended = False
    for t in request.topic_data:
        parts = []
        for p in t.partition_data:
            err, msg, base, append_time, start = 0, None, -1, -1, -1
            if refuse is not None:
                err, msg = refuse
            elif not has_partition(topics, t.name, p.index):
                err = UnknownTopicOrPartitionError.errno
            elif request.transactional_id is not None and (
                txn_error := _verify_transactional(ctx, request.transactional_id, t.name, p.index, p.records)
            ):
                # the produce path reports a stale epoch as INVALID_PRODUCER_EPOCH, as Kafka's does
                err = fenced_as(txn_error, 0, 1)
                msg = "the partition is not part of the producer's ongoing transaction"
            else:
                try:
                    info = broker.logs.get_log(t.name, p.index).append(p.records or b"")
                    base, append_time, start = info.base_offset, info.log_append_time, info.log_start_offset
                    appended = True
                except LogError as exc:
                    err, msg = error_code(exc), str(exc)
            parts.append(
                P(
                    index=p.index,
                    error_code=err,
                    base_offset=base,
                    log_append_time_ms=append_time,
                    log_start_offset=start,
                    record_errors=[],
                    error_message=msg,
                )
            )
        responses.append(T(name=t.name, partition_responses=parts))
    if appended:
        broker.appended.notify()
    if request.acks == 0:
        return None
    return ctx.response(responses=responses, throttle_time_ms=0)


def _verify_transactional(
    ctx: RequestContext, transactional_id: str, topic: str, partition: int, records: Any
) -> int:
    """Kafka's transaction verification of a transactional produce (0: the write may go ahead)."""
    data = bytes(records or b"")
    if len(data) < HEADER_SIZE:
        return 0  # the engine refuses what is not a batch
    header = read_header(data)
    return transaction_coordinator(ctx).verify(
        transactional_id, header.producer_id, header.producer_epoch, (topic, partition)
    )


register(API_KEY, 0, 12, handle, rejected_below=FIRST_SERVED_VERSION)
