"""DescribeAcls: v0-3 (API key 29)

Behaviour:
- The ACLs one filter matches (security/acl.py: ANY and null match anything; MATCH = every ACL
  that applies to the named resource: exact, wildcard and prefixes), grouped by resource pattern,
  as `kafka-acls --list` prints them.
- Needs DESCRIBE on CLUSTER (else CLUSTER_AUTHORIZATION_FAILED, checked first); without an
  authorizer: SECURITY_DISABLED. A filter with an UNKNOWN enum: INVALID_REQUEST.

Version notes:
- v1: pattern types (KIP-290). v2: flexible. v3: user resources (KIP-373; none are stored).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka.errors import InvalidRequestError
from kafka.protocol.admin.acl import DescribeAclsRequest

from ebb_broker.protocol.acls import binding_filter
from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 29


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> Any:
    def failed(code: int, message: str) -> Any:
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, resources=[])

    if not allowed(ctx, Op.DESCRIBE, CLUSTER):
        return failed(CLUSTER_AUTHORIZATION_FAILED, "DescribeAcls needs DESCRIBE on the cluster")
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return failed(SECURITY_DISABLED, "No authorizer is configured (authorizer.class.name)")
    acl_filter = binding_filter(request)
    reason = acl_filter.invalid_reason()
    if reason:
        return failed(InvalidRequestError.errno, reason)
    grouped: dict[tuple[int, str, int], list[Any]] = defaultdict(list)
    for b in sorted(authorizer.describe(acl_filter)):
        grouped[(b.resource_type, b.resource_name, b.pattern_type)].append(b)
    cls = ctx.response_class
    R = cls.DescribeAclsResource
    resources = [
        R(
            resource_type=rtype,
            resource_name=name,
            pattern_type=ptype,
            acls=[
                R.AclDescription(
                    principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission
                )
                for b in acls
            ],
        )
        for (rtype, name, ptype), acls in grouped.items()
    ]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, resources=resources)


register(API_KEY, 0, 3, handle)
