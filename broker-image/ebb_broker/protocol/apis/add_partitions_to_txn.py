"""AddPartitionsToTxn: v0-3 (API key 24)

Behaviour:
- Adds partitions to the producer's transaction, opening it (Empty/Complete -> Ongoing), stored in
  `__transaction_state` before the answer; one error per partition.
- INVALID_PRODUCER_ID_MAPPING for an unknown transactional id or another producer id,
  PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while a commit or abort completes.
- A partition of an unknown topic fails the request: UNKNOWN_TOPIC_OR_PARTITION for it,
  OPERATION_NOT_ATTEMPTED for the others, as Kafka does.

Version notes:
- v1: no change. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before, KIP-588). v3: flexible.
- v4-5 (KIP-890, batched by brokers for transaction verification) are not advertised: this broker
  verifies its own partitions.
"""

from __future__ import annotations

from typing import Any

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator

API_KEY = 24


async def handle(ctx: RequestContext, request: Any) -> Any:
    txn = transaction_coordinator(ctx)
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    errors = txn.add_partitions(
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        wanted,
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
