"""FindCoordinator: v0-4 (API key 10)

Behaviour:
- This broker coordinates every group (it is the only node); it answers itself for every key.
- Transaction coordinators (key type 1) are refused with COORDINATOR_NOT_AVAILABLE: transactions
  are not implemented, so no client is told they are.

Version notes:
- v1: key type, throttle time and error message.
- v3: flexible.
- v4: batched coordinator keys (KIP-699).
"""

from __future__ import annotations

from typing import Any

from kafka.errors import CoordinatorNotAvailableError

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 10
_GROUP = 0


async def handle(ctx: RequestContext, request: Any) -> Any:
    me = ctx.broker.identity
    supported = request.key_type == _GROUP
    error = 0 if supported else CoordinatorNotAvailableError.errno
    message = None if supported else "transactions are not supported by ebb-broker"
    host, port = ctx.advertised
    node = (me.node_id, host, port) if supported else (-1, "", -1)
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
