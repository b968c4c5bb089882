"""CreateAcls: v0-3 (API key 30)

Behaviour:
- Adds ACLs (Kafka's StandardAuthorizer model, security/authorizer.py); one result per creation,
  in order. Creating an ACL that exists succeeds without a duplicate. They are written to
  `ebb-acls.json` before the answer, so they survive a restart.
- Per creation INVALID_REQUEST, as Kafka's AclControlManager: resource type ANY/UNKNOWN, a pattern
  other than LITERAL/PREFIXED, operation ANY/UNKNOWN, permission other than ALLOW/DENY, an empty
  name, a CLUSTER resource not named `kafka-cluster`, a principal that is not `Type:name`.
- Needs ALTER on CLUSTER (else every result CLUSTER_AUTHORIZATION_FAILED); without an authorizer:
  SECURITY_DISABLED.

Version notes:
- v1: pattern types (KIP-290). v2: flexible. v3: user resources (KIP-373).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.errors import InvalidRequestError
from kafka.protocol.admin.acl import CreateAclsRequest

from ebb_broker.protocol.acls import creation
from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 30


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> Any:
    cls = ctx.response_class
    R = cls.AclCreationResult
    authorizer = ctx.broker.authorizer
    refuse: tuple[int, str] | None = None
    if not allowed(ctx, Op.ALTER, CLUSTER):
        refuse = (CLUSTER_AUTHORIZATION_FAILED, "CreateAcls needs ALTER on the cluster")
    elif authorizer is None:
        refuse = (SECURITY_DISABLED, "No authorizer is configured (authorizer.class.name)")
    if refuse is not None:
        return ctx.response(
            throttle_time_ms=0,
            results=[R(error_code=refuse[0], error_message=refuse[1]) for _ in request.creations],
        )
    assert authorizer is not None
    bindings = [creation(c) for c in request.creations]
    reasons = [b.invalid_reason() for b in bindings]
    valid = [b for b, r in zip(bindings, reasons, strict=True) if r is None]
    if valid:
        await asyncio.to_thread(authorizer.create, valid)  # fsynced before the answer
    return ctx.response(
        throttle_time_ms=0,
        results=[R(error_code=InvalidRequestError.errno if r else 0, error_message=r) for r in reasons],
    )


register(API_KEY, 0, 3, handle)
