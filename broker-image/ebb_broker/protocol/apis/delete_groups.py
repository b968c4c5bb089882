"""DeleteGroups: v0-2 (API key 42)

Behaviour:
- Needs DELETE on each GROUP (else GROUP_AUTHORIZATION_FAILED for it, nothing deleted).
- Only an empty group can be deleted (NON_EMPTY_GROUP otherwise); an unknown one answers
  GROUP_ID_NOT_FOUND. Deletion writes tombstones for the group metadata and every committed
  offset to `__consumer_offsets`, so the compactor drops them and a restart does not revive them.

Version notes:
- v1: no change. v2: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DeleteGroupsRequest

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 42


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> Any:
    cls = ctx.response_class
    forbidden = denied(ctx, Op.DELETE, GROUP, request.groups_names)
    results = [
        cls.DeletableGroupResult(
            group_id=g,
            error_code=GROUP_AUTHORIZATION_FAILED if g in forbidden else ctx.broker.groups.delete_group(g),
        )
        for g in request.groups_names
    ]
    return ctx.response(throttle_time_ms=0, results=results)


register(API_KEY, 0, 2, handle)
