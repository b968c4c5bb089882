"""DescribeGroups: v0-5 (API key 15)

Behaviour:
- State, protocol type, chosen protocol and members with their metadata and assignment.
- An unknown group is described as Dead with error NONE (Kafka before v6).
- Needs DESCRIBE on each GROUP (else GROUP_AUTHORIZATION_FAILED in its entry, which is kept).
- A group the request repeats is described once (protocol/duplicates.py).
  Authorized operations are computed when requested (v3+), else -2147483648.

Version notes:
- v1: throttle time. v3: authorized operations. v4: group instance id. v5: flexible.
- v6 (GROUP_ID_NOT_FOUND for unknown groups, error message) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsRequest

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    NOT_REQUESTED,
    Op,
    allowed,
    authorized_operations,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 15


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> Any:
    cls = ctx.response_class
    M = cls.DescribedGroup.DescribedGroupMember
    described = []
    want_ops = ctx.api_version >= 3 and request.include_authorized_operations
    for group_id in dict.fromkeys(request.groups):  # each group once (protocol/duplicates.py)
        if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
            described.append(
                cls.DescribedGroup(
                    error_code=GROUP_AUTHORIZATION_FAILED,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=NOT_REQUESTED,
                )
            )
            continue
        ops = authorized_operations(ctx, GROUP, group_id) if want_ops else NOT_REQUESTED
        g = ctx.broker.groups.groups.get(group_id)
        if g is None:
            described.append(
                cls.DescribedGroup(
                    error_code=0,
                    group_id=group_id,
                    group_state="Dead",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=ops,
                )
            )
            continue
        members = [
            M(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata_for(g.protocol),
                member_assignment=m.assignment,
            )
            for m in g.members.values()
        ]
        described.append(
            cls.DescribedGroup(
                error_code=0,
                group_id=group_id,
                group_state=g.state.value,
                protocol_type=g.protocol_type or "",
                protocol_data=g.protocol or "",
                members=members,
                authorized_operations=ops,
            )
        )
    return ctx.response(throttle_time_ms=0, groups=described)


register(API_KEY, 0, 5, handle)
