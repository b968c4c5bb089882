"""OffsetFetch: v1-9 (API key 9)

Behaviour:
- Null topics (v2+) return every committed offset of the group.
- A partition without a commit answers offset -1, error NONE, as Kafka does.
- v8+ batches several groups (KIP-709), each with its own error.
- Needs DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED: per group from v8, the whole
  response before) and DESCRIBE on each named TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED,
  offset -1); with all topics, topics the session may not describe are left out silently.
- require_stable (v7, KIP-447): a partition with a transactional commit still pending answers
  UNSTABLE_OFFSET_COMMIT (offset -1), so the consumer retries until the transaction ends; without
  it the last committed offset is returned (pending ones are never shown).

Version notes:
- v2: null topics = all, top-level error. v3: throttle time. v5: leader epoch.
- v6: flexible. v7: require stable. v8: groups array. v9: member id/epoch (KIP-848, ignored).
- v10 (topic ids) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import UnstableOffsetCommitError

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    Op,
    allowed,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 9


def _partitions(ctx: RequestContext, group_id: str, topics: Any) -> dict[str, list[tuple[int, Any, int]]]:
    """topic -> [(partition, commit or None, error)]: named topics the session may not DESCRIBE answer
    TOPIC_AUTHORIZATION_FAILED; with all topics (null) they are left out silently, as Kafka does."""
    committed = ctx.broker.groups.fetch(group_id)
    out: dict[str, list[tuple[int, Any, int]]] = {}
    if topics is None:
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, (t for t, _p in committed))
        for (topic, partition), c in sorted(committed.items()):
            if topic not in hidden:
                out.setdefault(topic, []).append((partition, c, 0))
        return out
    hidden = denied(ctx, Op.DESCRIBE, TOPIC, (t.name for t in topics))
    for t in topics:
        if t.name in hidden:
            out[t.name] = [(p, None, TOPIC_AUTHORIZATION_FAILED) for p in t.partition_indexes]
        else:
            out[t.name] = [(p, committed.get((t.name, p)), 0) for p in t.partition_indexes]
    return out


def _topics(
    topic_cls: Any, partition_cls: Any, ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> list[Any]:
    """The per-topic answer, shaped alike before (v1-7) and inside (v8+) the groups array."""
    groups = ctx.broker.groups
    out = []
    for topic, parts in _partitions(ctx, group_id, topics).items():
        answers = []
        for p, c, error in parts:
            if not error and require_stable and groups.has_pending_txn_offset(group_id, (topic, p)):
                c, error = None, UnstableOffsetCommitError.errno
            answers.append(
                partition_cls(
                    partition_index=p,
                    committed_offset=c.offset if c else -1,
                    committed_leader_epoch=c.leader_epoch if c else -1,
                    metadata=c.metadata if c else "",
                    error_code=error,
                )
            )
        out.append(topic_cls(name=topic, partitions=answers))
    return out


async def handle(ctx: RequestContext, request: Any) -> Any:
    cls = ctx.response_class
    if ctx.api_version >= 8:
        topic_cls = cls.OffsetFetchResponseGroup.OffsetFetchResponseTopics
        partition_cls = topic_cls.OffsetFetchResponsePartitions
        return ctx.response(
            throttle_time_ms=0,
            groups=[
                cls.OffsetFetchResponseGroup(
                    group_id=g.group_id, error_code=GROUP_AUTHORIZATION_FAILED, topics=[]
                )
                if not allowed(ctx, Op.DESCRIBE, GROUP, g.group_id)
                else cls.OffsetFetchResponseGroup(
                    group_id=g.group_id,
                    error_code=0,
                    topics=_topics(
                        topic_cls, partition_cls, ctx, g.group_id, g.topics, request.require_stable
                    ),
                )
                for g in request.groups
            ],
        )
    if not allowed(ctx, Op.DESCRIBE, GROUP, request.group_id):
        # Kafka's error response: the top-level code (v2+), and v1's partitions each carrying it.
        T = cls.OffsetFetchResponseTopic
        return ctx.response(
            throttle_time_ms=0,
            error_code=GROUP_AUTHORIZATION_FAILED,
            topics=[
                T(
                    name=t.name,
                    partitions=[
                        T.OffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=-1,
                            metadata="",
                            error_code=GROUP_AUTHORIZATION_FAILED,
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in request.topics or []
            ]
            if ctx.api_version < 2
            else [],
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=0,
        topics=_topics(
            cls.OffsetFetchResponseTopic,
            cls.OffsetFetchResponseTopic.OffsetFetchResponsePartition,
            ctx,
            request.group_id,
            request.topics,
            ctx.api_version >= 7 and bool(request.require_stable),
        ),
    )


register(API_KEY, 1, 9, handle)
