"""DescribeTransactions: v0 (API key 65)

Behaviour:
- For each transactional id (KIP-664, `kafka-transactions.sh describe`): its state by Kafka's name
  (Empty, Ongoing, PrepareCommit, ...), timeout, start time (-1 outside a transaction), producer id
  and epoch, and the partitions of the ongoing transaction; TRANSACTIONAL_ID_NOT_FOUND for an id
  this coordinator does not know.
- Needs DESCRIBE on each TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it); the
  partitions of topics the session may not DESCRIBE are left out, as Kafka's KafkaApis does.

Version notes:
- v0 only.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import TransactionalIdNotFoundError
from kafka.protocol.admin.transactions import DescribeTransactionsRequest

from ebb_broker.protocol.authz import (
    TOPIC,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import transaction_coordinator

API_KEY = 65


async def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> Any:
    txn = transaction_coordinator(ctx)
    cls = ctx.response_class
    S = cls.TransactionState
    states = []
    for txn_id in request.transactional_ids:
        may_describe = allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, txn_id)
        meta = txn.describe(txn_id) if may_describe else None
        if meta is None:
            states.append(
                S(
                    error_code=TransactionalIdNotFoundError.errno
                    if may_describe
                    else TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    transactional_id=txn_id,
                    transaction_state="",
                    transaction_timeout_ms=0,
                    transaction_start_time_ms=-1,
                    producer_id=-1,
                    producer_epoch=-1,
                    topics=[],
                )
            )
            continue
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, (t for t, _p in meta.partitions))
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(meta.partitions):
            if topic not in hidden:
                by_topic.setdefault(topic, []).append(p)
        states.append(
            S(
                error_code=0,
                transactional_id=txn_id,
                transaction_state=meta.state.kafka_name,
                transaction_timeout_ms=meta.timeout_ms,
                transaction_start_time_ms=meta.start_ms,
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                topics=[S.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
    return ctx.response(throttle_time_ms=0, transaction_states=states)


register(API_KEY, 0, 0, handle)
