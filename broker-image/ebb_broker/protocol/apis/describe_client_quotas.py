"""DescribeClientQuotas: v0-1 (API key 48)

Behaviour:
- KIP-546: the stored client quotas (quota/store.py) whose entity matches every filter component: an
  exact name (match type 0), the default (1) or any entity of the type (2); `strict` leaves out entities
  with other types. `kafka-configs --describe --entity-type users|clients [--entity-name N |
  --entity-default]` sends this.
- A bad filter fails the request as Kafka's does: INVALID_REQUEST for an empty or repeated entity type,
  a match string that contradicts its match type, an unknown match type, or `ip` beside `user` or
  `client-id`; UNSUPPORTED_VERSION for an unknown entity type. Entries are null then.
- On success the error message is the empty string, as Kafka 4.3 answers.
- Needs DESCRIBE_CONFIGS on CLUSTER when an authorizer is configured (else CLUSTER_AUTHORIZATION_FAILED).

Version notes:
- v1: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.quota.store import QuotaFilterError

API_KEY = 48


async def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> Any:
    if not allowed(ctx, Op.DESCRIBE_CONFIGS, CLUSTER):
        return ctx.response(
            throttle_time_ms=0,
            error_code=CLUSTER_AUTHORIZATION_FAILED,
            error_message="DESCRIBE_CONFIGS on the cluster is not allowed",
            entries=None,
        )
    store = ctx.broker.quotas.store
    try:
        # Neither the components nor a type is nullable: the codec closes the connection on a null.
        found = store.describe(
            [(c.entity_type, c.match_type, c.match) for c in request.components],
            strict=request.strict,
        )
    except QuotaFilterError as exc:
        return ctx.response(throttle_time_ms=0, error_code=exc.code, error_message=str(exc), entries=None)
    E = ctx.response_class.EntryData
    entries = [
        E(
            entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[E.ValueData(key=k, value=v) for k, v in sorted(quotas.items())],
        )
        for entity, quotas in found
    ]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message="", entries=entries)


register(API_KEY, 0, 1, handle)
