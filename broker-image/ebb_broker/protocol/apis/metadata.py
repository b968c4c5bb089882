"""Metadata: v0-12 (API key 3)

Behaviour:
- One broker, which leads every partition and is the controller (so admin clients send
  CreateTopics and friends here). Replicas and ISR are this broker; leader epoch 0.
- Null topics (v1+) or an empty list at v0 list every topic; named topics that do not exist are
  auto-created when auto.create.topics.enable is set and the request allows it (v4+; always
  before v4), otherwise UNKNOWN_TOPIC_OR_PARTITION. Illegal names get INVALID_TOPIC_EXCEPTION.
- `__consumer_offsets` is reported as internal.
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

from ebb_broker.coordinator.offsets_records import OFFSETS_TOPIC
from ebb_broker.coordinator.transaction_records import TRANSACTION_STATE_TOPIC
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
from ebb_broker.protocol.topics import ensure_topic
from ebb_broker.security.acl import CLUSTER_NAME

API_KEY = 3


async def handle(ctx: RequestContext, request: Any) -> Any:
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
        allow = request.allow_auto_topic_creation if v >= 4 else True
        names = [t.name for t in request.topics]
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, names)
        errors = {n: TOPIC_AUTHORIZATION_FAILED for n in hidden}
        may_create_any = allowed(ctx, Op.CREATE, CLUSTER)
        for n in names:
            if n in errors:
                continue
            if (
                allow
                and broker.config.auto_create_topics_enable
                and n not in broker.logs.topics()
                and not (may_create_any or allowed(ctx, Op.CREATE, TOPIC, n))
            ):
                errors[n] = TOPIC_AUTHORIZATION_FAILED  # may see it, may not create it
            else:
                errors[n] = ensure_topic(broker, n, allow_auto_create=allow)
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
                is_internal=name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC),
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
