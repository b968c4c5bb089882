"""DescribeConfigs: v1-4 (API key 32)

Behaviour:
- Topics (resource type 2): every topic config of the engine with its effective value, source
  (an override, or the broker level it inherits from: this broker's or the cluster's dynamic
  config, the static config, the default) and type; named keys restrict the list.
- Brokers (type 4): this broker's id lists every broker config with its effective value, its
  synonym chain (dynamic broker, dynamic default, static, default) and read_only false only for
  the dynamic keys; "" lists the cluster-wide dynamic defaults that are set, as Kafka does.
  Passwords and private keys have a null value (in the synonyms too) and is_sensitive, as Kafka's
  PASSWORD type.
- Groups (type 32, KIP-848): `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`
  with Kafka's defaults (45000, 5000) for any group, read-only (Kafka lets them be altered and
  also lists its share- and streams-group configs).
- Unknown topics get UNKNOWN_TOPIC_OR_PARTITION, other resources INVALID_REQUEST, each in its own
  result. A resource the request repeats is answered once, with the keys its entries ask for
  together (Kafka answers each repeat; each answer lists every config again).
- Needs DESCRIBE_CONFIGS on the TOPIC (else TOPIC_AUTHORIZATION_FAILED), the GROUP (else
  GROUP_AUTHORIZATION_FAILED) or, for a broker, the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED), per
  resource.

Version notes:
- v1: config source and synonyms. v3: config type and documentation (documentation is null).
- v4: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError
from kafka.protocol.admin.configs import DescribeConfigsRequest

from ebb_broker.dynamic_config import ConfigSource, Synonym
from ebb_broker.log.errors import shown
from ebb_broker.protocol.alter import config_refusal
from ebb_broker.protocol.authz import Op
from ebb_broker.protocol.configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    Described,
    config_type,
    describe_broker,
    describe_broker_defaults,
    describe_group,
    describe_topic,
    is_sensitive,
    render,
)
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 32


def _entries(broker: Broker, resource_type: int, name: str) -> tuple[int, str | None, list[Described]]:
    if resource_type == RESOURCE_TOPIC:
        if name not in broker.logs.topics():
            return UnknownTopicOrPartitionError.errno, f"topic {shown(name)} does not exist", []
        return (
            0,
            None,
            [Described(k, v, src, False, [Synonym(k, v, src)]) for k, v, src in describe_topic(broker, name)],
        )
    if resource_type == RESOURCE_BROKER and name == "":
        return 0, None, describe_broker_defaults(broker.dynamic_config)
    if resource_type == RESOURCE_BROKER and name == str(broker.identity.node_id):
        return 0, None, describe_broker(broker.config, broker.dynamic_config)
    if resource_type == RESOURCE_GROUP:
        return 0, None, describe_group()
    return InvalidRequestError.errno, f"resource type {resource_type} {shown(name)} unknown", []


def _resources_once(resources: Any) -> dict[tuple[int, str], set[str] | None]:
    """Each resource once (protocol/duplicates.py), with the keys its entries ask for together (None: all)."""
    out: dict[tuple[int, str], set[str] | None] = {}
    for res in resources:
        key = (res.resource_type, res.resource_name)
        keys = set(res.configuration_keys) if res.configuration_keys else None
        if key not in out:
            out[key] = keys
        else:
            before = out[key]
            out[key] = None if before is None or keys is None else before | keys
    return out


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> Any:
    cls = ctx.response_class
    R = cls.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult
    results = []
    for (resource_type, resource_name), wanted in _resources_once(request.resources).items():
        refused = config_refusal(ctx, Op.DESCRIBE_CONFIGS, resource_type, resource_name)
        err, msg, entries = (
            (*refused, []) if refused is not None else _entries(ctx.broker, resource_type, resource_name)
        )
        configs = [
            C(
                name=e.name,
                value=render(e.value),
                read_only=e.read_only,
                config_source=int(e.source),
                is_default=e.source == ConfigSource.DEFAULT_CONFIG,
                is_sensitive=is_sensitive(e.name),
                synonyms=[
                    C.DescribeConfigsSynonym(name=s.name, value=render(s.value), source=int(s.source))
                    for s in e.synonyms
                ]
                if request.include_synonyms
                else [],
                config_type=int(config_type(e.name, e.value)),
                documentation=None,
            )
            for e in entries
            if wanted is None or e.name in wanted
        ]
        results.append(
            R(
                error_code=err,
                error_message=msg,
                resource_type=resource_type,
                resource_name=resource_name,
                configs=configs,
            )
        )
    return ctx.response(throttle_time_ms=0, results=results)


register(API_KEY, 1, 4, handle)
