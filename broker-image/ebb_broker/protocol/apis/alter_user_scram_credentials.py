"""AlterUserScramCredentials: v0 (API key 51)

Behaviour:
- KIP-554: upsertions carry the client's salt and SaltedPassword = Hi(password, salt, iterations);
  the broker keeps only StoredKey and ServerKey (security/credentials.py). Deletions remove one
  mechanism of a user. `kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=...]'
  --entity-type users --entity-name alice` sends exactly this.
- One result per user. Per user, as Kafka's ScramControlManager: empty name or empty salt/salted
  password, or iterations outside 4096-16384 -> UNACCEPTABLE_CREDENTIAL; a mechanism other than
  SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2) -> UNSUPPORTED_SASL_MECHANISM; deleting a credential that
  does not exist -> RESOURCE_NOT_FOUND; a user named twice anywhere in the request ->
  DUPLICATE_RESOURCE. The valid users' changes are written together, atomically, before the answer.
- Needs ALTER on CLUSTER when an authorizer is configured (else every result
  CLUSTER_AUTHORIZATION_FAILED).

Version notes:
- v0 only (flexible).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kafka.protocol.admin.users import AlterUserScramCredentialsRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.security.credentials import (
    DUPLICATE_RESOURCE,
    MECHANISM_BY_CODE,
    RESOURCE_NOT_FOUND,
    UNACCEPTABLE_CREDENTIAL,
    UNSUPPORTED_SASL_MECHANISM,
    CredentialError,
    Deletion,
    Upsertion,
    check_iterations,
    credential_from_salted,
)

API_KEY = 51


def _check_user(name: str, mechanism: int) -> str:
    if not name:
        raise CredentialError(UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if mechanism not in MECHANISM_BY_CODE:
        raise CredentialError(UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {mechanism}")
    return MECHANISM_BY_CODE[mechanism]


async def handle(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> Any:
    if not allowed(ctx, Op.ALTER, CLUSTER):
        names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return ctx.response(
            throttle_time_ms=0,
            results=[
                ctx.response_class.AlterUserScramCredentialsResult(
                    user=n,
                    error_code=CLUSTER_AUTHORIZATION_FAILED,
                    error_message="ALTER on the cluster is not allowed",
                )
                for n in names
            ],
        )
    store = ctx.broker.credentials
    known = store.users()
    counts = Counter([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    errors: dict[str, tuple[int, str]] = {}
    deletions, upsertions = [], []
    for d in request.deletions:
        try:
            mech = _check_user(d.name, d.mechanism)
            if mech not in known.get(d.name, {}):
                raise CredentialError(
                    RESOURCE_NOT_FOUND, f"Attempt to delete a user credential that does not exist: {d.name}"
                )
            deletions.append(Deletion(d.name, mech))
        except CredentialError as exc:
            errors.setdefault(d.name, (exc.code, str(exc)))
    for u in request.upsertions:
        try:
            mech = _check_user(u.name, u.mechanism)
            check_iterations(u.iterations)
            if not u.salt or not u.salted_password:
                raise CredentialError(UNACCEPTABLE_CREDENTIAL, "salt and salted password must not be empty")
            cred = credential_from_salted(mech, bytes(u.salt), bytes(u.salted_password), u.iterations)
            upsertions.append(Upsertion(u.name, mech, cred))
        except CredentialError as exc:
            errors.setdefault(u.name, (exc.code, str(exc)))
    for name, n in counts.items():
        if n > 1:
            errors[name] = (
                DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
    ok_dels = [d for d in deletions if d.user not in errors]
    ok_ups = [u for u in upsertions if u.user not in errors]
    if ok_dels or ok_ups:
        await asyncio.to_thread(store.apply, ok_ups, ok_dels)  # fsynced before the answer
    cls = ctx.response_class
    return ctx.response(
        throttle_time_ms=0,
        results=[
            cls.AlterUserScramCredentialsResult(
                user=name,
                error_code=errors.get(name, (0, None))[0],
                error_message=errors.get(name, (0, None))[1],
            )
            for name in counts
        ],
    )


register(API_KEY, 0, 0, handle)
