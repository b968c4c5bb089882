"""DeleteGroups: v0-2 (API key 42)

Behaviour:
- Only an empty group can be deleted (NON_EMPTY_GROUP otherwise); an unknown one answers
  GROUP_ID_NOT_FOUND. Deletion writes tombstones for the group metadata and every committed
  offset to `__consumer_offsets`, so the compactor drops them and a restart does not revive them.

Version notes:
- v1: no change. v2: flexible.
"""

from __future__ import annotations

from typing import Any

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 42


async def handle(ctx: RequestContext, request: Any) -> Any:
    cls = ctx.response_class
    results = [
        cls.DeletableGroupResult(group_id=g, error_code=ctx.broker.groups.delete_group(g))
        for g in request.groups_names
    ]
    return ctx.response(throttle_time_ms=0, results=results)


register(API_KEY, 0, 2, handle)
