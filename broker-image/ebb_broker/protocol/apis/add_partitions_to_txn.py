"""AddPartitionsToTxn: v0-3 (API key 24)

Behaviour:
- Adds partitions to the producer's transaction, opening it (Empty/Complete -> Ongoing), stored in
  `__transaction_state` before the answer; one error per partition.
- INVALID_PRODUCER_ID_MAPPING for an unknown transactional id or another producer id,
  PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while a commit or abort completes.
- A partition of an unknown topic fails the request: UNKNOWN_TOPIC_OR_PARTITION for it,
  OPERATION_NOT_ATTEMPTED for the others, as Kafka does.
- Needs WRITE on the TRANSACTIONAL_ID (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
  and WRITE on each TOPIC: a partition of a topic the session may not write, or of an internal
  topic (Kafka adds those only through AddOffsetsToTxn), answers TOPIC_AUTHORIZATION_FAILED and fails
  the request like an unknown one, nothing added (Kafka's KafkaApis).

Version notes:
- v1: no change. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before, KIP-588). v3: flexible.
- v4-5 (KIP-890, batched by brokers for transaction verification) are not advertised: this broker
  verifies its own partitions.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import OperationNotAttemptedError, UnknownTopicOrPartitionError
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest

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
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, has_partition
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator

API_KEY = 24


def _refused(
    ctx: RequestContext, transactional_id: str, wanted: list[tuple[str, int]]
) -> dict[tuple[str, int], int] | None:
    """Kafka's checks before the coordinator: WRITE on the transactional id, then per partition WRITE on
    its (non-internal) topic and its existence; any failure fails every partition."""
    if not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(wanted, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    unwritable = denied(ctx, Op.WRITE, TOPIC, (t for t, _p in wanted)) | INTERNAL_TOPICS
    topics = ctx.broker.logs.topics()
    errors = {
        tp: TOPIC_AUTHORIZATION_FAILED
        if tp[0] in unwritable
        else (0 if has_partition(topics, *tp) else int(UnknownTopicOrPartitionError.errno))
        for tp in wanted
    }
    if not any(errors.values()):
        return None
    return {tp: e or int(OperationNotAttemptedError.errno) for tp, e in errors.items()}


async def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> Any:
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    txn_id = request.v3_and_below_transactional_id
    errors = _refused(ctx, txn_id, wanted)
    if errors is None:
        errors = transaction_coordinator(ctx).add_partitions(
            txn_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, wanted
        )
    cls = ctx.response_class
    T = cls.AddPartitionsToTxnTopicResult
    P = T.AddPartitionsToTxnPartitionResult
    results = [
        T(
            name=t.name,
            results_by_partition=[
                P(partition_index=p, partition_error_code=fenced_as(errors[(t.name, p)], ctx.api_version, 2))
                for p in t.partitions
            ],
        )
        for t in request.v3_and_below_topics
    ]
    return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=results)


register(API_KEY, 0, 3, handle)
