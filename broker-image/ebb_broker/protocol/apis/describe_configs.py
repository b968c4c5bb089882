"""DescribeConfigs: v1-4 (API key 32)

Behaviour:
- Topics (resource type 2): every topic config of the engine with its effective value, source
  and type; named keys restrict the list. Brokers (type 4, this broker's id or ""): the static
  broker configs (passwords and private keys with a null value and is_sensitive, as Kafka's
  PASSWORD type). Unknown topics get UNKNOWN_TOPIC_OR_PARTITION, other resource types
  INVALID_REQUEST, each in its own result.
- Needs DESCRIBE_CONFIGS on the TOPIC (else TOPIC_AUTHORIZATION_FAILED) or, for a broker, the
  CLUSTER (else CLUSTER_AUTHORIZATION_FAILED), per resource.
- Synonyms: the value's own source only (Kafka lists the whole synonym chain).

Version notes:
- v1: config source and synonyms. v3: config type and documentation (documentation is null).
- v4: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError

from ebb_broker.protocol.alter import config_refusal
from ebb_broker.protocol.authz import Op
from ebb_broker.protocol.configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    config_type,
    describe_broker,
    describe_topic,
    is_sensitive,
    render,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 32


async def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = ctx.response_class
    R = cls.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult
    results = []
    for res in request.resources:
        entries: list[tuple[str, Any, Any]] | None = None
        err, msg = 0, None
        refused = config_refusal(ctx, Op.DESCRIBE_CONFIGS, res.resource_type, res.resource_name)
        if refused is not None:
            err, msg = refused
        elif res.resource_type == RESOURCE_TOPIC:
            if res.resource_name in broker.logs.topics():
                entries = describe_topic(broker, res.resource_name)
            else:
                err, msg = UnknownTopicOrPartitionError.errno, f"topic {res.resource_name!r} does not exist"
        elif res.resource_type == RESOURCE_BROKER and res.resource_name in ("", str(broker.identity.node_id)):
            entries = describe_broker(broker.config)
        else:
            err, msg = (
                InvalidRequestError.errno,
                f"resource type {res.resource_type} {res.resource_name!r} unknown",
            )
        wanted = set(res.configuration_keys) if res.configuration_keys else None
        configs = [
            C(
                name=k,
                value=render(v),
                read_only=res.resource_type == RESOURCE_BROKER,
                config_source=int(src),
                is_default=src == 5,
                is_sensitive=is_sensitive(k),
                synonyms=[C.DescribeConfigsSynonym(name=k, value=render(v), source=int(src))]
                if request.include_synonyms
                else [],
                config_type=int(config_type(k, v)),
                documentation=None,
            )
            for k, v, src in (entries or [])
            if wanted is None or k in wanted
        ]
        results.append(
            R(
                error_code=err,
                error_message=msg,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )
        )
    return ctx.response(throttle_time_ms=0, results=results)


register(API_KEY, 1, 4, handle)
