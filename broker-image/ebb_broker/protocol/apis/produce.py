"""Produce: v0-12 advertised, v3-12 served (API key 0)

Behaviour:
- v0-2 are advertised and answered with UNSUPPORTED_VERSION per partition, as Kafka 4 does
  (KAFKA-18659): librdkafka before 2.11.1 drops compression unless Produce v0 is advertised.
- Batches are handed to the engine as received (opaque bytes: it validates header and CRC-32C,
  stamps offsets, checks idempotent sequences); errors are per partition.
- acks=0 gets no response. acks=1 and acks=-1 are the same on one node (the append is done
  before the response; durability follows log.flush.interval.messages like Kafka).
- Unknown topics answer UNKNOWN_TOPIC_OR_PARTITION (clients create them through Metadata).
- Transactional produce is refused with INVALID_REQUEST: transactions are not implemented.
- Authorization (Kafka's KafkaApis): WRITE on the TRANSACTIONAL_ID of a transactional request (else
  every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each TOPIC (else its partitions
  TOPIC_AUTHORIZATION_FAILED, nothing appended); no IDEMPOTENT_WRITE check (KIP-679).

Version notes:
- v2: log append time. v3: transactional id, v2 batches only. v5: log start offset.
- v8: record errors and error message. v9: flexible. v10-12: current leader / node endpoints
  (tagged, left empty). v13 (topic ids) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError, UnsupportedVersionError

from ebb_broker.log.errors import LogError
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
from ebb_broker.protocol.topics import has_partition

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
    elif request.transactional_id is not None and not allowed(
        ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id
    ):
        refuse = (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "WRITE on the transactional id is not allowed")
    elif request.transactional_id is not None:
        refuse = (InvalidRequestError.errno, "transactions are not supported by ebb-broker")
    topics = broker.logs.topics()
    unwritable = denied(ctx, Op.WRITE, TOPIC, (t.name for t in request.topic_data))
    responses = []
    appended = False
    for t in request.topic_data:
        parts = []
        for p in t.partition_data:
            err, msg, base, append_time, start = 0, None, -1, -1, -1
            if refuse is not None:
                err, msg = refuse
            elif t.name in unwritable:
                err = TOPIC_AUTHORIZATION_FAILED
            elif not has_partition(topics, t.name, p.index):
                err = UnknownTopicOrPartitionError.errno
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


register(API_KEY, 0, 12, handle, rejected_below=FIRST_SERVED_VERSION)
