"""SyncGroup: v0-5 (API key 14)

Behaviour:
- The leader's request carries every member's assignment; it is stored in `__consumer_offsets`
  (GroupMetadataValue) before the group becomes Stable and the followers' requests return.
- Followers wait for the leader; a new rebalance answers them with REBALANCE_IN_PROGRESS.
- Members that do not send SyncGroup within the rebalance timeout are removed and the group
  rebalances again.
- Needs READ on the GROUP (else GROUP_AUTHORIZATION_FAILED, the whole response).

Version notes:
- v3: group instance id. v4: flexible. v5: protocol type and name: INCONSISTENT_GROUP_PROTOCOL when
  they differ from the group's, echoed back otherwise.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import SyncGroupRequest

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 14


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> Any:
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    result = await ctx.broker.groups.membership.sync(
        group_id=request.group_id,
        generation=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if ctx.api_version >= 3 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        protocol_type=request.protocol_type if ctx.api_version >= 5 else None,
        protocol_name=request.protocol_name if ctx.api_version >= 5 else None,
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol,
        assignment=result.assignment,
    )


register(API_KEY, 0, 5, handle)
