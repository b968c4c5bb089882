"""DeleteAcls: v0-3 (API key 31)

Behaviour:
- Removes every ACL each filter matches (the same matching as DescribeAcls) and returns them per
  filter; a filter matching nothing succeeds with an empty list. Written to `ebb-acls.json` before
  the answer.
- A filter with an UNKNOWN enum gets INVALID_REQUEST for itself; more than 10000 deletions in one
  request: POLICY_VIOLATION for every filter and nothing deleted (KRaft's limit of records per
  operation).
- Needs ALTER on CLUSTER (else every filter CLUSTER_AUTHORIZATION_FAILED); without an authorizer:
  SECURITY_DISABLED.

Version notes:
- v1: pattern types (KIP-290). v2: flexible. v3: user resources (KIP-373).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.errors import InvalidRequestError, PolicyViolationError
from kafka.protocol.admin.acl import DeleteAclsRequest

from ebb_broker.protocol.acls import binding_filter
from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 31
MAX_DELETIONS = 10_000


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> Any:
    cls = ctx.response_class
    R = cls.DeleteAclsFilterResult
    M = R.DeleteAclsMatchingAcl
    authorizer = ctx.broker.authorizer

    def everyone(code: int, message: str) -> Any:
        return ctx.response(
            throttle_time_ms=0,
            filter_results=[
                R(error_code=code, error_message=message, matching_acls=[]) for _ in request.filters
            ],
        )

    if not allowed(ctx, Op.ALTER, CLUSTER):
        return everyone(CLUSTER_AUTHORIZATION_FAILED, "DeleteAcls needs ALTER on the cluster")
    if authorizer is None:
        return everyone(SECURITY_DISABLED, "No authorizer is configured (authorizer.class.name)")
    filters = [binding_filter(f) for f in request.filters]
    reasons = [f.invalid_reason() for f in filters]
    valid = [f for f, r in zip(filters, reasons, strict=True) if r is None]
    if sum(len(authorizer.describe(f)) for f in valid) > MAX_DELETIONS:
        return everyone(
            PolicyViolationError.errno, f"Unable to delete more than {MAX_DELETIONS} ACLs in one request"
        )
    matched = iter(await asyncio.to_thread(authorizer.delete, valid) if valid else [])
    results = []
    for reason in reasons:
        if reason:
            results.append(R(error_code=InvalidRequestError.errno, error_message=reason, matching_acls=[]))
            continue
        results.append(
            R(
                error_code=0,
                error_message=None,
                matching_acls=[
                    M(
                        error_code=0,
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in sorted(next(matched))
                ],
            )
        )
    return ctx.response(throttle_time_ms=0, filter_results=results)


register(API_KEY, 0, 3, handle)
