"""IncrementalAlterConfigs: v0-1 (API key 44)

Behaviour:
- Topic resources, operations SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on the topic's
  overrides (APPEND/SUBTRACT only for list configs: cleanup.policy, retention.commitoffset.groups),
  KIP-339. The result is
  validated as a whole: a bad key or value answers INVALID_CONFIG and changes nothing.
- Broker resources (this broker's id, or "" for the cluster-wide default, what `kafka-configs
  --entity-type brokers --entity-default` sends): the same operations on the dynamic broker configs
  of that level (APPEND/SUBTRACT on log.cleanup.policy); only dynamic keys are accepted (the broker
  defaults of topic configs, see docs/broker.md), others get INVALID_REQUEST "Cannot update these
  configs dynamically", as does a bad value. The change is persisted in the data directory and takes
  effect at once, for every topic without its own override.
- validate_only checks without applying. Group resources are refused (read-only here); unknown
  topics get UNKNOWN_TOPIC_OR_PARTITION.
- Needs ALTER_CONFIGS on the TOPIC (else TOPIC_AUTHORIZATION_FAILED), the GROUP (else
  GROUP_AUTHORIZATION_FAILED) or, for a broker, the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED), per
  resource; nothing of it changes.
- A resource the request repeats gets one INVALID_REQUEST answer ("Duplicate resource.", Kafka's
  ControllerApis) and is not changed.

Version notes:
- v1: flexible.
"""

from __future__ import annotations

import functools
from typing import Any

from kafka.errors import InvalidRequestError
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest

from ebb_broker.log.errors import InvalidConfigError, shown
from ebb_broker.protocol.alter import apply_topic_overrides, config_refusal
from ebb_broker.protocol.authz import Op
from ebb_broker.protocol.configs import LIST_KEYS
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import DUPLICATE_RESOURCE, once_each
from ebb_broker.protocol.registry import register

API_KEY = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _apply(
    ops: list[tuple[str, int, str | None]], old: dict[str, str], effective: dict[str, str]
) -> dict[str, str]:
    new = dict(old)
    for key, op, value in ops:
        if op == SET:
            if value is None:
                raise InvalidConfigError(f"config {shown(key)}: SET needs a value")
            new[key] = value
        elif op == DELETE:
            new.pop(key, None)
        elif op in (APPEND, SUBTRACT):
            if key not in LIST_KEYS:
                raise InvalidConfigError(f"config {shown(key)} is not a list: APPEND/SUBTRACT do not apply")
            items = [i for i in new.get(key, effective.get(key, "")).split(",") if i]
            for item in (value or "").split(","):
                if op == APPEND and item and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            new[key] = ",".join(items)
        else:
            raise InvalidConfigError(f"config {shown(key)}: unknown operation {op}")
    return new


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> Any:
    cls = ctx.response_class
    out = []
    for res, repeated in once_each(request.resources, lambda r: (r.resource_type, r.resource_name)):
        # A resource the request repeats: one answer, nothing changed (Kafka's ControllerApis).
        refused = (InvalidRequestError.errno, DUPLICATE_RESOURCE) if repeated else None
        refused = refused or config_refusal(ctx, Op.ALTER_CONFIGS, res.resource_type, res.resource_name)
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]
        err, msg = refused or apply_topic_overrides(
            ctx.broker,
            res.resource_type,
            res.resource_name,
            functools.partial(_apply, ops),
            request.validate_only,
        )
        out.append(
            cls.AlterConfigsResourceResponse(
                error_code=err,
                error_message=msg,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return ctx.response(throttle_time_ms=0, responses=out)


register(API_KEY, 0, 1, handle)
