"""LeaveGroup: v0-5 (API key 13)

Behaviour:
- Removes the member(s) and starts a rebalance for those who stay (or empties the group).
- v3+ batches members (KIP-345); each gets its own error, the top-level error stays NONE. A member
  given by group instance id only (empty member id) is removed by that id, as
  `kafka-consumer-groups --delete-members` does; a stale member id of a static member gets
  FENCED_INSTANCE_ID.
- Static consumers do not send LeaveGroup when they close: their session timeout removes them.
- Needs READ on the GROUP (else GROUP_AUTHORIZATION_FAILED, the whole response).

Version notes:
- v1: throttle time. v3: members array with group instance ids. v4: flexible. v5: reason.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import LeaveGroupRequest

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 13


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> Any:
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    groups = ctx.broker.groups
    if ctx.api_version < 3:
        error, errors = groups.membership.leave(request.group_id, [(request.member_id, None)])
        # Before v3 the one member's error is the response's error (Kafka's LeaveGroupResponse).
        return ctx.response(throttle_time_ms=0, error_code=error or (errors[0] if errors else 0))
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    error, errors = groups.membership.leave(request.group_id, leaving)
    cls = ctx.response_class
    members = [
        cls.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
        for (m, i), e in zip(leaving, errors, strict=False)
    ]
    return ctx.response(throttle_time_ms=0, error_code=error, members=members)


register(API_KEY, 0, 5, handle)
