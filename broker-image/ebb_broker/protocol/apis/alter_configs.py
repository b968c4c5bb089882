"""AlterConfigs: v0-2 (API key 33)

Behaviour:
- Topic resources: the given configs replace every override of the topic (keys not named go
  back to their defaults), as Kafka's non-incremental AlterConfigs does. Validated as a whole
  first: a bad key or value answers INVALID_CONFIG naming it and changes nothing.
- Broker resources (this broker's id, or "" for the cluster-wide default) replace the dynamic
  broker configs of that level, as Kafka's AlterConfigs does; only dynamic keys are accepted (the
  broker defaults of topic configs, see docs/broker.md), others get INVALID_REQUEST "Cannot update
  these configs dynamically", as does a bad value. The change is persisted in the data directory and
  takes effect at once, for every topic without its own override.
- validate_only checks without applying. Group resources are refused (read-only here); unknown
  topics get UNKNOWN_TOPIC_OR_PARTITION.
- Needs ALTER_CONFIGS on the TOPIC (else TOPIC_AUTHORIZATION_FAILED), the GROUP (else
  GROUP_AUTHORIZATION_FAILED) or, for a broker, the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED), per
  resource; nothing of it changes.
- A resource the request repeats gets one INVALID_REQUEST answer ("Duplicate resource.", Kafka's
  ControllerApis) and is not changed.

Version notes:
- v1: no change. v2: flexible.
"""

from __future__ import annotations

import functools
from typing import Any

from kafka.errors import InvalidRequestError
from kafka.protocol.admin.configs import AlterConfigsRequest

from ebb_broker.protocol.alter import apply_topic_overrides, config_refusal
from ebb_broker.protocol.authz import Op
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import DUPLICATE_RESOURCE, once_each
from ebb_broker.protocol.registry import register

API_KEY = 33


def _replace_all(new: dict[str, str], old: dict[str, str], effective: dict[str, str]) -> dict[str, str]:
    """AlterConfigs (legacy, not incremental) replaces the topic's whole set of overrides."""
    return new


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> Any:
    cls = ctx.response_class
    out = []
    for res, repeated in once_each(request.resources, lambda r: (r.resource_type, r.resource_name)):
        # A resource the request repeats: one answer, nothing changed (Kafka's ControllerApis).
        refused = (InvalidRequestError.errno, DUPLICATE_RESOURCE) if repeated else None
        refused = refused or config_refusal(ctx, Op.ALTER_CONFIGS, res.resource_type, res.resource_name)
        new = {c.name: c.value for c in res.configs}
        err, msg = refused or apply_topic_overrides(
            ctx.broker,
            res.resource_type,
            res.resource_name,
            functools.partial(_replace_all, new),
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


register(API_KEY, 0, 2, handle)
