"""Heartbeat: v0-4 (API key 12)

Behaviour:
- Keeps the member's session alive (session.timeout.ms from its JoinGroup); REBALANCE_IN_PROGRESS
  tells it to rejoin.
- UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION as Kafka's classic coordinator returns them;
  FENCED_INSTANCE_ID for a static member's id that a restarted instance replaced (KIP-345).
- Needs READ on the GROUP (else GROUP_AUTHORIZATION_FAILED, the whole response).

Version notes:
- v1: throttle time. v3: group instance id. v4: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import HeartbeatRequest

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 12


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> Any:
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    error = ctx.broker.groups.membership.heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
    )
    return ctx.response(throttle_time_ms=0, error_code=error)


register(API_KEY, 0, 4, handle)
