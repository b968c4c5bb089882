"""ListTransactions: v0-1 (API key 66)

Behaviour:
- Every transactional id this coordinator knows (KIP-664, `kafka-transactions.sh list`) with its
  producer id and state, filtered by state names, producer ids and (v1, KIP-994) a minimum running
  time; state names it does not know come back in unknown_state_filters.
- Lists only the transactional ids the session may DESCRIBE (Kafka's KafkaApis filter).

Version notes:
- v1: duration filter. v2 (transactional id pattern, KIP-1152) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.transactions import ListTransactionsRequest

from ebb_broker.coordinator.transaction_records import TxnState
from ebb_broker.protocol.authz import TRANSACTIONAL_ID, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import transaction_coordinator

API_KEY = 66
_KNOWN = {s.kafka_name for s in TxnState}


async def handle(ctx: RequestContext, request: ListTransactionsRequest) -> Any:
    states = set(request.state_filters or [])
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    listed = transaction_coordinator(ctx).list(states, set(request.producer_id_filters or []), duration)
    hidden = denied(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, (m.transactional_id for m in listed))
    cls = ctx.response_class
    return ctx.response(
        throttle_time_ms=0,
        error_code=0,
        unknown_state_filters=sorted(states - _KNOWN),
        transaction_states=[
            cls.TransactionState(
                transactional_id=m.transactional_id,
                producer_id=m.producer_id,
                transaction_state=m.state.kafka_name,
            )
            for m in sorted(listed, key=lambda m: m.transactional_id)
            if m.transactional_id not in hidden
        ],
    )


register(API_KEY, 0, 1, handle)
