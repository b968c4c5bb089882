"""CreateTopics: v2-7 (API key 19)

Behaviour:
- Partitions -1 means num.partitions; replication factor -1 or 1 (one node), anything larger
  gets INVALID_REPLICATION_FACTOR; manual assignments must name this broker only; more than
  10 000 partitions gets INVALID_PARTITIONS.
- Configs are validated by the engine; a bad one gets INVALID_CONFIG naming it and the topic is
  not created. Partitions past max.partitions or the descriptor limit get POLICY_VIOLATION
  before anything is written (as KRaft refuses oversized operations). Illegal names get
  INVALID_TOPIC_EXCEPTION, existing ones TOPIC_ALREADY_EXISTS.
- Needs CREATE on the CLUSTER or on the TOPIC (else TOPIC_AUTHORIZATION_FAILED for it); without
  DESCRIBE_CONFIGS on the topic its configs are left out and `topic_config_error_code` is
  TOPIC_AUTHORIZATION_FAILED (KIP-525), as Kafka does.
- validate_only checks everything without creating. Each topic has its own result.

Version notes:
- v2: throttle time. v3-4: no change. v5: flexible; partitions, replication factor and configs in
  the result (KIP-525). v6: no change. v7: topic id (zero UUID).
"""

from __future__ import annotations

from typing import Any

from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
)

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import CLUSTER, TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.configs import describe_topic, render
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import MAX_PARTITIONS_PER_TOPIC, invalid_topic_reason

API_KEY = 19


def _create(broker: Broker, t: Any, validate_only: bool) -> tuple[int, str | None, int]:
    reason = invalid_topic_reason(t.name)
    if reason:
        return InvalidTopicError.errno, reason, -1
    if t.name in broker.logs.topics():
        return TopicAlreadyExistsError.errno, f"topic {t.name!r} already exists", -1
    if t.replication_factor not in (-1, 1) and not t.assignments:
        return InvalidReplicationFactorError.errno, "replication factor must be 1: ebb-broker is one node", -1
    me = broker.identity.node_id
    if t.assignments:
        if any(list(a.broker_ids) != [me] for a in t.assignments):
            return InvalidReplicationAssignmentError.errno, f"replicas must be exactly [{me}]", -1
        partitions = len(t.assignments)
    else:
        partitions = broker.config.num_partitions if t.num_partitions == -1 else t.num_partitions
    if partitions < 1:
        return InvalidPartitionsError.errno, "number of partitions must be at least 1", -1
    if partitions > MAX_PARTITIONS_PER_TOPIC:
        return InvalidPartitionsError.errno, f"at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic", -1
    overrides = {c.name: c.value for c in t.configs}
    try:
        broker.config.topic_config(overrides)
        if validate_only:
            broker.logs.check_new_partitions(partitions)
        else:
            broker.logs.create_topic(t.name, partitions, overrides)
    except LogError as exc:
        return error_code(exc), str(exc), -1
    return 0, None, partitions


async def handle(ctx: RequestContext, request: Any) -> Any:
    cls = ctx.response_class
    R = cls.CreatableTopicResult
    results = []
    # CREATE on the CLUSTER, else on each TOPIC; DESCRIBE_CONFIGS on the TOPIC to see its configs.
    may_create_any = allowed(ctx, Op.CREATE, CLUSTER)
    for t in request.topics:
        msg: str | None
        if not (may_create_any or allowed(ctx, Op.CREATE, TOPIC, t.name)):
            err, msg, partitions = TOPIC_AUTHORIZATION_FAILED, "CREATE on the topic is not allowed", -1
        else:
            err, msg, partitions = _create(ctx.broker, t, request.validate_only)
        configs = []
        config_error = 0
        if err == 0 and ctx.api_version >= 5 and not allowed(ctx, Op.DESCRIBE_CONFIGS, TOPIC, t.name):
            config_error = TOPIC_AUTHORIZATION_FAILED
        elif err == 0 and not request.validate_only and ctx.api_version >= 5:
            configs = [
                R.CreatableTopicConfigs(
                    name=k, value=render(v), read_only=False, config_source=int(src), is_sensitive=False
                )
                for k, v, src in describe_topic(ctx.broker, t.name)
            ]
        results.append(
            R(
                name=t.name,
                error_code=err,
                error_message=msg,
                num_partitions=partitions,
                replication_factor=1 if err == 0 else -1,
                configs=configs,
                topic_config_error_code=config_error,
            )
        )
    return ctx.response(throttle_time_ms=0, topics=results)


register(API_KEY, 2, 7, handle)
