"""DescribeGroups: v0-5 (API key 15)

Behaviour:
- State, protocol type, chosen protocol and members with their metadata and assignment.
- An unknown group is described as Dead with error NONE (Kafka before v6).
- Authorized operations are not computed (no ACLs): -2147483648 ("not requested") is returned.

Version notes:
- v1: throttle time. v3: authorized operations. v4: group instance id. v5: flexible.
- v6 (GROUP_ID_NOT_FOUND for unknown groups, error message) is not advertised.
"""

from __future__ import annotations

from typing import Any

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 15
_NOT_REQUESTED = None  # the codec writes None as -2147483648: "not requested" (no ACLs)


async def handle(ctx: RequestContext, request: Any) -> Any:
    cls = ctx.response_class
    M = cls.DescribedGroup.DescribedGroupMember
    described = []
    for group_id in request.groups:
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
                    authorized_operations=_NOT_REQUESTED,
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
                authorized_operations=_NOT_REQUESTED,
            )
        )
    return ctx.response(throttle_time_ms=0, groups=described)


register(API_KEY, 0, 5, handle)
