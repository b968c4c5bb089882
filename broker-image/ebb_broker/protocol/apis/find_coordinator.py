"""FindCoordinator: v0-4 (API key 10)

Behaviour:
- This broker coordinates every group and every transactional id (it is the only node); it
  answers itself for both key types. The first transaction coordinator lookup a session may make
  creates `__transaction_state`, as Kafka does.
- Needs DESCRIBE on the GROUP (key type 0) or the TRANSACTIONAL_ID (key type 1): else
  GROUP_AUTHORIZATION_FAILED / TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per key from v4.

Version notes:
- v1: key type, throttle time and error message.
- v3: flexible.
- v4: batched coordinator keys (KIP-699).
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import with_state_topic

API_KEY = 10
_GROUP, _TRANSACTION = 0, 1


def _refused(ctx: RequestContext, key_type: int, key: str) -> tuple[int, str] | None:
    """DESCRIBE on the GROUP (key type 0) or the TRANSACTIONAL_ID (1), as Kafka's KafkaApis."""
    if key_type == _GROUP:
        if not allowed(ctx, Op.DESCRIBE, GROUP, key):
            return GROUP_AUTHORIZATION_FAILED, "DESCRIBE on the group is not allowed"
    elif not allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, key):
        return TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "DESCRIBE on the transactional id is not allowed"
    return None


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> Any:
    me = ctx.broker.identity
    supported = request.key_type in (_GROUP, _TRANSACTION)
    error = 0 if supported else InvalidRequestError.errno
    message = None if supported else f"unknown coordinator key type {request.key_type}"
    host, port = ctx.advertised
    node = (me.node_id, host, port) if supported else (-1, "", -1)
    if request.key_type == _TRANSACTION:
        keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
        if any(_refused(ctx, _TRANSACTION, key) is None for key in keys):
            await with_state_topic(ctx)
    if ctx.api_version >= 4:
        cls = ctx.response_class
        coordinators = []
        for key in request.coordinator_keys:
            refused = _refused(ctx, request.key_type, key)
            n, (err, msg) = (node, (error, message)) if refused is None else ((-1, "", -1), refused)
            coordinators.append(
                cls.Coordinator(
                    key=key, node_id=n[0], host=n[1], port=n[2], error_code=err, error_message=msg
                )
            )
        return ctx.response(throttle_time_ms=0, coordinators=coordinators)
    refused = _refused(ctx, request.key_type if ctx.api_version >= 1 else _GROUP, request.key)
    if refused is not None:
        node, (error, message) = (-1, "", -1), refused
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        node_id=node[0],
        host=node[1],
        port=node[2],
    )


register(API_KEY, 0, 4, handle)
