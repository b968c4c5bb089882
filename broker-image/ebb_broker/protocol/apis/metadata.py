"""Metadata: v0-12 (API key 3)

Behaviour:
- One broker, which leads every partition and is the controller (so admin clients send
  CreateTopics and friends here). Replicas and ISR are this broker; leader epoch 0.
- Null topics (v1+) or an empty list at v0 list every topic; named topics are answered once each,
  however often the request repeats them (Kafka takes them as a set). Named topics that do not exist
  are auto-created when auto.create.topics.enable is set and the request allows it (v4+; always
  before v4), otherwise UNKNOWN_TOPIC_OR_PARTITION. Illegal names get INVALID_TOPIC_EXCEPTION.
- Auto-creation makes the request's missing topics in one batch (protocol/topics.py): all of them or,
  past the partition budget, none (POLICY_VIOLATION each); the requesting client waits for the batch,
  off the event loop. Internal topics are never auto-created (UNKNOWN_TOPIC_OR_PARTITION until their
  coordinator makes them).
- `__consumer_offsets` and `__transaction_state` are reported as internal.
- Topic ids are the zero UUID (topic-id versions of other APIs are not advertised).
- Authorization (Kafka's KafkaApis): DESCRIBE on each TOPIC; named topics the session may not
  describe answer TOPIC_AUTHORIZATION_FAILED, and a listing of every topic leaves them out
  silently. Auto-creation also needs CREATE on the CLUSTER or on the TOPIC (else
  TOPIC_AUTHORIZATION_FAILED). Authorized operations are computed when requested (v8+ topics,
  v8-10 cluster).

Version notes:
- v1: controller id, rack, is_internal, null = all topics. v2: cluster id. v3: throttle time.
- v4: allow auto topic creation. v5: offline replicas. v7: leader epoch. v8: authorized
  operations. v9: flexible. v10: topic ids. v11: no cluster ops.
- v13 (top-level error code) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidTopicError, UnknownTopicOrPartitionError
from kafka.protocol.metadata.metadata import MetadataRequest

from ebb_broker.log.topic_names import invalid_reason
from ebb_broker.protocol.authz import (
    CLUSTER,
    NOT_REQUESTED,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    Op,
    allowed,
    authorized_operations,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, auto_create
from ebb_broker.security.acl import CLUSTER_NAME

API_KEY = 3


async def handle(ctx: RequestContext, request: MetadataRequest) -> Any:
    broker = ctx.broker
    me = broker.identity
    host, port = ctx.advertised  # the listener this request came in on
    v = ctx.api_version
    cls = ctx.response_class
    T = cls.MetadataResponseTopic
    P = T.MetadataResponsePartition
    if request.topics is None or (v == 0 and not request.topics):
        # Every topic the session may DESCRIBE; the others are left out silently, as Kafka does.
        existing = broker.logs.topics()
        names = sorted(set(existing) - denied(ctx, Op.DESCRIBE, TOPIC, existing))
        errors = dict.fromkeys(names, 0)
    else:
        # Each name once, whatever the request repeats (Kafka takes the names as a set): 2,000 repeats of
        # a 1,000-partition topic once made a 52 MB answer.
        names = list(dict.fromkeys(t.name for t in request.topics))
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, names)
        errors = {n: TOPIC_AUTHORIZATION_FAILED for n in hidden}
        existing = broker.logs.topics()
        missing = [n for n in names if n not in errors and n not in existing]
        errors.update(dict.fromkeys((n for n in names if n in existing and n not in errors), 0))
        allow = request.allow_auto_topic_creation if v >= 4 else True
        if allow and broker.config.auto_create_topics_enable:
            may_create_any = allowed(ctx, Op.CREATE, CLUSTER)
            uncreatable = set() if may_create_any else denied(ctx, Op.CREATE, TOPIC, missing)
            errors.update(dict.fromkeys(uncreatable, TOPIC_AUTHORIZATION_FAILED))  # may see, not create
            errors.update(await auto_create(broker, [n for n in missing if n not in uncreatable]))
        else:
            errors.update(
                {
                    n: InvalidTopicError.errno if invalid_reason(n) else UnknownTopicOrPartitionError.errno
                    for n in missing
                }
            )
    topic_ops = v >= 8 and request.include_topic_authorized_operations
    cluster_ops = 8 <= v <= 10 and request.include_cluster_authorized_operations
    topics_meta = broker.logs.topics()
    topics = []
    for name in names:
        meta = topics_meta.get(name)
        err = errors[name]
        parts = (
            []
            if err or meta is None
            else [
                P(
                    error_code=0,
                    partition_index=p,
                    leader_id=me.node_id,
                    leader_epoch=0,
                    replica_nodes=[me.node_id],
                    isr_nodes=[me.node_id],
                    offline_replicas=[],
                )
                for p in range(meta.partitions)
            ]
        )
        topics.append(
            T(
                error_code=err,
                name=name,
                topic_id=meta.topic_id if meta is not None and not err else None,
                is_internal=name in INTERNAL_TOPICS,
                partitions=parts,
                authorized_operations=authorized_operations(ctx, TOPIC, name)
                if topic_ops and not err
                else NOT_REQUESTED,
            )
        )
    return ctx.response(
        throttle_time_ms=0,
        brokers=[cls.MetadataResponseBroker(node_id=me.node_id, host=host, port=port, rack=None)],
        cluster_id=me.cluster_id,
        controller_id=me.node_id,
        topics=topics,
        authorized_operations=authorized_operations(ctx, CLUSTER, CLUSTER_NAME)
        if cluster_ops
        else NOT_REQUESTED,
    )


register(API_KEY, 0, 12, handle)
