"""JoinGroup: v0-9 (API key 11)

Behaviour:
- Classic protocol only. A member without an id gets MEMBER_ID_REQUIRED and an id to rejoin with
  (v4+, KIP-394); static members (group.instance.id, KIP-345) get an id at once.
- A new group's first rebalance waits group.initial.rebalance.delay.ms (extended while members keep
  joining, at most the rebalance timeout), so consumers started together share one generation.
- The response waits until every known member has rejoined or the rebalance timeout passes;
  dynamic members that did not rejoin by then are removed, static ones keep their place.
- A static member rejoining a Stable group with an unknown member id (its client restarted) takes
  its old place and assignment without a rebalance; the old member id gets FENCED_INSTANCE_ID.
- The leader receives every member's metadata for the chosen protocol; followers get none.
- Needs READ on the GROUP (else GROUP_AUTHORIZATION_FAILED, the whole response).

Version notes:
- v1: rebalance timeout (session timeout used before it, as Kafka does).
- v4: MEMBER_ID_REQUIRED.
- v5: group instance id.
- v6: flexible. v7: protocol type in the response. v8: reason (logged).
- v9: skip assignment: a restarted static leader of a Stable group is told it leads but must not
  assign (KIP-814); before v9 it is given the old leader id instead.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import JoinGroupRequest

from ebb_broker.protocol.authz import GROUP, GROUP_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 11


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> Any:
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    result = await ctx.broker.groups.membership.join(
        group_id=request.group_id,
        member_id=request.member_id or "",
        group_instance_id=request.group_instance_id if ctx.api_version >= 5 else None,
        client_id=ctx.client_id or "",
        client_host="/" + ctx.client_host,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms
        if ctx.api_version >= 1
        else request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=ctx.api_version >= 4,
        supports_skip_assignment=ctx.api_version >= 9,
        reason=request.reason if ctx.api_version >= 8 else None,
    )
    cls = ctx.response_class
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol if ctx.api_version >= 7 or result.protocol else "",
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            cls.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=meta)
            for m, i, meta in result.members
        ],
    )


register(API_KEY, 0, 9, handle)
