"""FindCoordinator: v0-4 (API key 10)

Behaviour:
- This broker coordinates every group and every transactional id (it is the only node); it
  answers itself for both key types. The first transaction coordinator lookup creates
  `__transaction_state`, as Kafka does.

Version notes:
- v1: key type, throttle time and error message.
- v3: flexible.
- v4: batched coordinator keys (KIP-699).
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import transaction_coordinator

API_KEY = 10
_GROUP, _TRANSACTION = 0, 1


async def handle(ctx: RequestContext, request: Any) -> Any:
    me = ctx.broker.identity
    supported = request.key_type in (_GROUP, _TRANSACTION)
    if request.key_type == _TRANSACTION:
        transaction_coordinator(ctx).ensure_topic()
    error = 0 if supported else InvalidRequestError.errno
    message = None if supported else f"unknown coordinator key type {request.key_type}"
    node = (me.node_id, me.host, me.port) if supported else (-1, "", -1)
    if ctx.api_version >= 4:
        cls = ctx.response_class
        return ctx.response(
            throttle_time_ms=0,
            coordinators=[
                cls.Coordinator(
                    key=key,
                    node_id=node[0],
                    host=node[1],
                    port=node[2],
                    error_code=error,
                    error_message=message,
                )
                for key in request.coordinator_keys
            ],
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        node_id=node[0],
        host=node[1],
        port=node[2],
    )


register(API_KEY, 0, 4, handle)
