"""CreateTopics: v2-7 (API key 19)

Behaviour:
- Partitions -1 means num.partitions; replication factor -1 or 1 (one node), anything larger
  gets INVALID_REPLICATION_FACTOR; manual assignments must name this broker only; more than
  10 000 partitions gets INVALID_PARTITIONS.
- Configs are validated by the engine; a bad one gets INVALID_CONFIG naming it and the topic is
  not created. The request's topics are created as one batch in a worker thread
  (protocol/topics.py): if their partitions together go past max.partitions or the descriptor
  limit, every one of them gets POLICY_VIOLATION before anything is written (as KRaft refuses
  oversized operations). Illegal names get INVALID_TOPIC_EXCEPTION, so do names that collide with
  an existing topic once `.` is read as `_` (`a.b` and `a_b`, Kafka's rule); existing ones
  TOPIC_ALREADY_EXISTS; internal topics INVALID_REQUEST. A name the request repeats gets one
  INVALID_REQUEST answer ("Duplicate topic name.", as Kafka's ControllerApis) and is not created.
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
    InvalidRequestError,
)
from kafka.protocol.admin.topics import CreateTopicsRequest

from ebb_broker.log import NewTopic
from ebb_broker.protocol.authz import CLUSTER, TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.configs import describe_topic, render
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.duplicates import DUPLICATE_TOPIC, split_repeats
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import (
    MAX_PARTITIONS_PER_TOPIC,
    create_topics,
    creation_error,
    creation_refusal,
)

API_KEY = 19


def _checked(broker: Broker, t: Any) -> tuple[int, str | None] | NewTopic:
    """What the request may create for `t`, or why not (the checks the engine does not make)."""
    refusal = creation_refusal(t.name)
    if refusal:
        return refusal
    if t.replication_factor not in (-1, 1) and not t.assignments:
        return InvalidReplicationFactorError.errno, "replication factor must be 1: ebb-broker is one node"
    me = broker.identity.node_id
    if t.assignments:
        if any(list(a.broker_ids) != [me] for a in t.assignments):
            return InvalidReplicationAssignmentError.errno, f"replicas must be exactly [{me}]"
        partitions = len(t.assignments)
    else:
        partitions = broker.config.num_partitions if t.num_partitions == -1 else t.num_partitions
    if partitions < 1:
        return InvalidPartitionsError.errno, "number of partitions must be at least 1"
    if partitions > MAX_PARTITIONS_PER_TOPIC:
        return InvalidPartitionsError.errno, f"at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic"
    return NewTopic(t.name, partitions, {c.name: c.value for c in t.configs})


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> Any:
    cls = ctx.response_class
    R = cls.CreatableTopicResult
    by_name = {t.name: t for t in request.topics}
    names, repeated = split_repeats(t.name for t in request.topics)
    # CREATE on the CLUSTER, else on each TOPIC; DESCRIBE_CONFIGS on the TOPIC to see its configs.
    may_create_any = allowed(ctx, Op.CREATE, CLUSTER)
    outcome: dict[str, tuple[int, str | None]] = {}
    batch = []
    for name in names:
        if name in repeated:  # Kafka's ControllerApis: one answer for the name, nothing created
            outcome[name] = InvalidRequestError.errno, DUPLICATE_TOPIC
        elif not (may_create_any or allowed(ctx, Op.CREATE, TOPIC, name)):
            outcome[name] = TOPIC_AUTHORIZATION_FAILED, "CREATE on the topic is not allowed"
        elif isinstance(checked := _checked(ctx.broker, by_name[name]), NewTopic):
            batch.append(checked)
        else:
            outcome[name] = checked
    created = await create_topics(ctx.broker, batch, validate_only=request.validate_only)
    outcome.update({name: creation_error(result) for name, result in created.items()})
    partitions = {t.name: t.partitions for t in batch}
    results = []
    for name in names:
        err, msg = outcome[name]
        configs = []
        config_error = 0
        if err == 0 and ctx.api_version >= 5 and not allowed(ctx, Op.DESCRIBE_CONFIGS, TOPIC, name):
            config_error = TOPIC_AUTHORIZATION_FAILED
        elif err == 0 and not request.validate_only and ctx.api_version >= 5:
            configs = [
                R.CreatableTopicConfigs(
                    name=k, value=render(v), read_only=False, config_source=int(src), is_sensitive=False
                )
                for k, v, src in describe_topic(ctx.broker, name)
            ]
        results.append(
            R(
                name=name,
                error_code=err,
                error_message=msg,
                num_partitions=partitions[name] if err == 0 else -1,
                replication_factor=1 if err == 0 else -1,
                configs=configs,
                topic_config_error_code=config_error,
            )
        )
    return ctx.response(throttle_time_ms=0, topics=results)


register(API_KEY, 2, 7, handle)
