"""The protocol layer's questions to the authorizer: one place that knows the session and the error codes.

Each API module asks at the top of its handler what Kafka's KafkaApis asks (docs/broker.md has the table)
and answers Kafka's error codes: TOPIC_AUTHORIZATION_FAILED (29), GROUP_AUTHORIZATION_FAILED (30),
CLUSTER_AUTHORIZATION_FAILED (31), TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53). Without an authorizer
every question answers yes and authorized operations are every valid operation of the resource type.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ebb_broker.protocol.context import RequestContext
from ebb_broker.security.acl import CLUSTER_NAME, VALID_OPERATIONS, AclOperation, ResourceType

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
SECURITY_DISABLED = 54
# What the codec writes for "authorized operations not requested" (-2147483648).
NOT_REQUESTED = None

Op = AclOperation
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)

log = logging.getLogger("ebb_broker.authorizer")


def allowed(
    ctx: RequestContext, op: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME
) -> bool:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    session = ctx.session
    ok = authorizer.authorize(session.principal, session.client_host, op, resource_type, name)
    if not ok:
        log.debug(
            "denied %s %s on %s:%s from %s (%s)",
            session.principal,
            op.name,
            resource_type.name,
            name,
            session.client_host,
            ctx.messages.name,
        )
    return ok


def denied(
    ctx: RequestContext, op: AclOperation, resource_type: ResourceType, names: Iterable[str]
) -> set[str]:
    """The names (of one resource type) the session may not ``op``; empty without an authorizer."""
    if ctx.broker.authorizer is None:
        return set()
    return {n for n in set(names) if not allowed(ctx, op, resource_type, n)}


def allowed_on_any(ctx: RequestContext, op: AclOperation, resource_type: ResourceType) -> bool:
    """Kafka's authorizeByResourceType: some resource of the type may be ``op``-ed (KIP-679)."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize_any(ctx.session.principal, ctx.session.client_host, op, resource_type)


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> set[int]:
    """The operations (codes) the session may do on the resource: the codec writes the set as Kafka's
    32-bit field (bit n = operation code n). Without an authorizer, every valid operation of the type."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return {int(op) for op in VALID_OPERATIONS[resource_type]}
    session = ctx.session
    bits = authorizer.authorized_operations(session.principal, session.client_host, resource_type, name)
    return {n for n in range(32) if bits >> n & 1}
