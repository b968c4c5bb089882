"""LeaveGroup: v0-5 (API key 13)

Behaviour:
- Removes the member(s) and starts a rebalance for those who stay (or empties the group).
- v3+ batches members (KIP-345); each gets its own error, the top-level error stays NONE.
- Needs READ on the GROUP (else GROUP_AUTHORIZATION_FAILED, the whole response).

Version notes:
- v1: throttle time. v3: members array with group instance ids. v4: flexible. v5: reason.
"""

from __future__ import annotations

from typing import Any

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 13


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    groups = ctx.broker.groups
    if ctx.api_version < 3:
        return ctx.response(
            throttle_time_ms=0, error_code=groups.leave(request.group_id, request.member_id, None)
        )
    cls = ctx.response_class
    members = [
        cls.MemberResponse(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            error_code=groups.leave(request.group_id, m.member_id, m.group_instance_id),
        )
        for m in request.members
    ]
    return ctx.response(throttle_time_ms=0, error_code=0, members=members)


register(API_KEY, 0, 5, handle)
