"""ListGroups: v0-5 (API key 16)

Behaviour:
- Every live group of this broker (all of them: it coordinates every group) with DESCRIBE on the
  CLUSTER; else only the groups with DESCRIBE on the GROUP, the others silently left out.
- The states filter (v4, KIP-518) and types filter (v5, KIP-848: only "classic" exists here) apply
  case-insensitively, as Kafka's do.

Version notes:
- v1: throttle time. v3: flexible. v4: states filter and group state. v5: types filter and type.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import ListGroupsRequest

from ebb_broker.protocol.authz import CLUSTER, GROUP, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 16


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> Any:
    states = {s.lower() for s in (request.states_filter or [])} if ctx.api_version >= 4 else set()
    types = {t.lower() for t in (request.types_filter or [])} if ctx.api_version >= 5 else set()
    cls = ctx.response_class
    listed = []
    # DESCRIBE on the CLUSTER lists every group; otherwise the groups the session may DESCRIBE, the
    # others left out silently (Kafka never answers CLUSTER_AUTHORIZATION_FAILED here).
    every = allowed(ctx, Op.DESCRIBE, CLUSTER)
    for g in ctx.broker.groups.membership.list_groups():
        if not every and not allowed(ctx, Op.DESCRIBE, GROUP, g.group_id):
            continue
        if states and g.state.value.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        listed.append(
            cls.ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type or "",
                group_state=g.state.value,
                group_type="classic",
            )
        )
    return ctx.response(throttle_time_ms=0, error_code=0, groups=listed)


register(API_KEY, 0, 5, handle)
