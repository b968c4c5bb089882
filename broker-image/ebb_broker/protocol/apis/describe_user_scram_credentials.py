"""DescribeUserScramCredentials: v0 (API key 50)

Behaviour:
- KIP-554: the SCRAM mechanisms and iteration counts of the named users (null or empty = every
  user with a credential); salts and keys are never returned.
- A named user without credentials answers RESOURCE_NOT_FOUND, a user named twice
  DUPLICATE_RESOURCE, each in its own result, as Kafka does.
- Needs DESCRIBE on CLUSTER when an authorizer is configured (else the top-level error and every
  result CLUSTER_AUTHORIZATION_FAILED).

Version notes:
- v0 only (flexible).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka.protocol.admin.users import DescribeUserScramCredentialsRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.security.credentials import DUPLICATE_RESOURCE, MECHANISMS, RESOURCE_NOT_FOUND

API_KEY = 50


async def handle(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> Any:
    cls = ctx.response_class
    R = cls.DescribeUserScramCredentialsResult
    if not allowed(ctx, Op.DESCRIBE, CLUSTER):
        refusal = "DESCRIBE on the cluster is not allowed"
        return ctx.response(
            throttle_time_ms=0,
            error_code=CLUSTER_AUTHORIZATION_FAILED,
            error_message=refusal,
            results=[
                R(
                    user=u.name,
                    error_code=CLUSTER_AUTHORIZATION_FAILED,
                    error_message=refusal,
                    credential_infos=[],
                )
                for u in request.users or []
            ],
        )
    known = ctx.broker.credentials.users()
    named = [u.name for u in request.users or []]
    counts = Counter(named)
    results: list[Any] = []
    for user in named or sorted(known):
        err, msg, infos = 0, None, []
        if counts[user] > 1:
            err, msg = (
                DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
            )
        elif user not in known:
            err, msg = (
                RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {user}",
            )
        else:
            infos = [
                R.CredentialInfo(mechanism=MECHANISMS[mech][0], iterations=iterations)
                for mech, iterations in sorted(known[user].items())
            ]
        if err and any(r.user == user for r in results):
            continue  # a duplicated name is reported once
        results.append(R(user=user, error_code=err, error_message=msg, credential_infos=infos))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, results=results)


register(API_KEY, 0, 0, handle)
