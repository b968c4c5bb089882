"""CreatePartitions: v0-3 (API key 37)

Behaviour:
- Needs ALTER on each TOPIC (else TOPIC_AUTHORIZATION_FAILED for it).
- Grows a topic to `count` partitions; a count not above the current one gets INVALID_PARTITIONS,
  an unknown topic UNKNOWN_TOPIC_OR_PARTITION, assignments naming another broker
  INVALID_REPLICA_ASSIGNMENT. Partitions past max.partitions or the descriptor limit get
  POLICY_VIOLATION before anything is written. validate_only checks without creating.
- A topic the request repeats gets one INVALID_REQUEST answer ("Duplicate topic name.", Kafka's
  ControllerApis) and is not grown.
- Internal topics get INVALID_REQUEST: a group's (or transactional id's) partition is its hash modulo
  the partition count, so growing `__consumer_offsets` would move groups away from their commits
  (Kafka lets an admin do it and documents that it must not).

Version notes:
- v1: no change. v2: flexible. v3: no change.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from kafka.protocol.admin.topics import CreatePartitionsRequest

from ebb_broker.log.errors import LogError, shown
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.duplicates import DUPLICATE_TOPIC, split_repeats
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, MAX_PARTITIONS_PER_TOPIC

API_KEY = 37


def _grow(broker: Broker, t: Any, validate_only: bool) -> tuple[int, str | None]:
    meta = broker.logs.topics().get(t.name)
    if meta is None:
        return UnknownTopicOrPartitionError.errno, f"topic {shown(t.name)} does not exist"
    current = meta.partitions
    if t.count <= current:
        return (
            InvalidPartitionsError.errno,
            f"topic {shown(t.name)} has {current} partitions; asked for {t.count}",
        )
    if t.count > MAX_PARTITIONS_PER_TOPIC:
        return InvalidPartitionsError.errno, f"at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic"
    me = broker.identity.node_id
    if t.assignments and any(list(a.broker_ids) != [me] for a in t.assignments):
        return InvalidReplicationAssignmentError.errno, f"replicas must be exactly [{me}]"
    try:
        if validate_only:
            broker.logs.check_new_partitions(t.count - current)
        else:
            broker.logs.create_partitions(t.name, t.count)
    except LogError as exc:
        return error_code(exc), str(exc)
    return 0, None


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> Any:
    cls = ctx.response_class
    results = []
    by_name = {t.name: t for t in request.topics}
    names, repeated = split_repeats(t.name for t in request.topics)
    unalterable = denied(ctx, Op.ALTER, TOPIC, names)
    for name in names:
        msg: str | None
        if name in repeated:  # Kafka's ControllerApis: one answer for the name, nothing grown
            err, msg = InvalidRequestError.errno, DUPLICATE_TOPIC
        elif name in unalterable:
            err, msg = TOPIC_AUTHORIZATION_FAILED, "ALTER on the topic is not allowed"
        elif name in INTERNAL_TOPICS:
            err, msg = InvalidRequestError.errno, f"{name} is internal: its partition count cannot change"
        else:
            err, msg = _grow(ctx.broker, by_name[name], request.validate_only)
        results.append(cls.CreatePartitionsTopicResult(name=name, error_code=err, error_message=msg))
    return ctx.response(throttle_time_ms=0, results=results)


register(API_KEY, 0, 3, handle)
