"""AlterClientQuotas: v0-1 (API key 49)

Behaviour:
- KIP-546: sets or removes quota keys of user, client-id and user + client-id entities and their
  defaults (a null name), as `kafka-configs --alter --add-config producer_byte_rate=N --entity-type
  users|clients [--entity-name N | --entity-default]` and `--delete-config` send. They apply at once
  (quota/manager.py) and are written to `client-quotas.json` before the answer.
- One result per distinct entity, each validated as Kafka's ClientQuotaControlManager does, with
  INVALID_REQUEST and Kafka's message: an empty entity, an unknown entity type, an empty name, `ip`
  beside `user` or `client-id`, an unknown key, a value not above 0, a fractional or too large byte
  rate. An entity with one bad op changes nothing; the other entities still apply. `validate_only`
  validates and changes nothing.
- Needs ALTER_CONFIGS on CLUSTER when an authorizer is configured (else every entity
  CLUSTER_AUTHORIZATION_FAILED, nothing changed).

Deviations (protocol/SKIPPED.md): `request_percentage`, `controller_mutation_rate` and `ip` entities are
refused (not enforced here); a repeated key or entity changes none of that entity (Kafka applies the
first and answers the error); more than 10,000 ops in one request are refused; NaN or infinite values
are refused.

Version notes:
- v1: flexible.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.quota.store import Alteration, AlterResult, QuotaOp, entity_of

API_KEY = 49


async def handle(ctx: RequestContext, request: AlterClientQuotasRequest) -> Any:
    # None of these arrays or types is nullable: the codec closes the connection on a null (as Kafka's
    # reader refuses it) before this runs.
    alterations = [
        Alteration(
            entity_of((e.entity_type, e.entity_name) for e in entry.entity),
            [QuotaOp(op.key, op.value, op.remove) for op in entry.ops],
        )
        for entry in request.entries
    ]
    quotas = ctx.broker.quotas
    if not allowed(ctx, Op.ALTER_CONFIGS, CLUSTER):
        message = "ALTER_CONFIGS on the cluster is not allowed"
        entities = dict.fromkeys(a.entity for a in alterations)
        results = [AlterResult(e, CLUSTER_AUTHORIZATION_FAILED, message) for e in entities]
    else:
        async with quotas.alter_lock:  # each request plans against what the previous one left
            results, new = quotas.store.plan(alterations)
            if new is not None and not request.validate_only:
                await asyncio.to_thread(quotas.store.write, new)  # fsynced before the answer
                quotas.store.apply(new)
    E = ctx.response_class.EntryData
    return ctx.response(
        throttle_time_ms=0,
        entries=[
            E(
                error_code=r.error_code,
                error_message=r.error_message,
                entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in r.entity],
            )
            for r in results
        ],
    )


register(API_KEY, 0, 1, handle)
