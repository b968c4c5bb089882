"""OffsetFetch: v1-9 (API key 9)

Behaviour:
- Null topics (v2+) return every committed offset of the group.
- A partition without a commit answers offset -1, error NONE, as Kafka does.
- v8+ batches several groups (KIP-709), each with its own error.
- A group, topic or partition the request repeats is answered once (protocol/duplicates.py): a
  group with 10 000 commits named 1,000 times would otherwise be answered 1,000 times.
- Needs DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED: per group from v8, the whole
  response before) and DESCRIBE on each named TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED,
  offset -1); with all topics, topics the session may not describe are left out silently.
- require_stable (v7, KIP-447): a partition with a transactional commit still pending answers
  UNSTABLE_OFFSET_COMMIT (offset -1), so the consumer retries until the transaction ends; without
  it the last committed offset is returned (pending ones are never shown).

Version notes:
- v2: null topics = all, top-level error. v3: throttle time. v5: leader epoch.
- v6: flexible. v7: require stable. v8: groups array. v9: member id/epoch (KIP-848, ignored).
- v8+ answers are written to bytes (`ebb_formats.offset_fetch.encode`), not through the generated codec:
  an admin reading 100 groups per request (the operator's guard, the analysis job) gets 10 000s of
  partitions back, which the codec's objects took 28 ms to build and encode, `encode` 1.5 ms.
- v10 (topic ids) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import UnstableOffsetCommitError
from kafka.protocol.consumer.group import OffsetFetchRequest

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
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.encoded import EncodedBody
from ebb_broker.protocol.registry import register
from ebb_formats import offset_fetch
from ebb_formats.offset_fetch import Row

API_KEY = 9


def _answers(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> list[tuple[str, list[Row]]]:
    """The per-topic answer of one group, the same before (v1-7) and inside (v8+) the groups array.
    Named topics the session may not DESCRIBE answer TOPIC_AUTHORIZATION_FAILED; with all topics (null)
    they are left out silently, as Kafka does. One pass over the group's commits: an admin reading
    every group's offsets asks for 10 000s of partitions per request."""
    committed = ctx.broker.groups.offsets.fetch(group_id)
    out: dict[str, list[Row]] = {}
    if topics is None:
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, (t for t, _p in committed))
        current, rows = None, None
        for (topic, partition), c in sorted(committed.items()):
            if topic != current:
                current, rows = topic, None if topic in hidden else out.setdefault(topic, [])
            if rows is not None:
                rows.append((partition, c.offset, c.leader_epoch, c.metadata, 0))
    else:
        wanted = _partitions_once(topics)
        hidden = denied(ctx, Op.DESCRIBE, TOPIC, wanted)
        for name, partitions in wanted.items():
            if name in hidden:
                out[name] = [(p, -1, -1, "", TOPIC_AUTHORIZATION_FAILED) for p in partitions]
                continue
            found = [(p, committed.get((name, p))) for p in partitions]
            out[name] = [
                (p, c.offset, c.leader_epoch, c.metadata, 0) if c else (p, -1, -1, "", 0) for p, c in found
            ]
    if require_stable and ctx.broker.groups.offsets.has_pending_txn_offset(group_id):
        pending = ctx.broker.groups.offsets.has_pending_txn_offset
        unstable = UnstableOffsetCommitError.errno
        for topic, rows in out.items():
            out[topic] = [
                (r[0], -1, -1, "", unstable) if not r[4] and pending(group_id, (topic, r[0])) else r
                for r in rows
            ]
    return list(out.items())


def _partitions_once(topics: Any) -> dict[str, list[int]]:
    """The named partitions, each once (protocol/duplicates.py)."""
    wanted, _repeated = partitions_once(topics, lambda t: t.name, lambda t: t.partition_indexes, lambda p: p)
    return {name: list(partitions) for name, partitions in wanted.items()}


def _groups_once(groups: Any) -> list[tuple[str, list[Any] | None]]:
    """v8+: each group once; a group the request repeats is asked for what its entries ask together
    (every topic if any entry asks for all)."""
    out: dict[str, list[Any] | None] = {}
    for g in groups:
        if g.group_id not in out:
            out[g.group_id] = None if g.topics is None else list(g.topics)
        elif g.topics is None or out[g.group_id] is None:
            out[g.group_id] = None
        else:
            out[g.group_id] += g.topics
    return list(out.items())


def _topics(topic_cls: Any, partition_cls: Any, answers: list[tuple[str, list[Row]]]) -> list[Any]:
    return [
        topic_cls(
            name=topic,
            partitions=[
                partition_cls(
                    partition_index=p,
                    committed_offset=offset,
                    committed_leader_epoch=epoch,
                    metadata=metadata,
                    error_code=code,
                )
                for p, offset, epoch, metadata, code in rows
            ],
        )
        for topic, rows in answers
    ]


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> Any:
    cls = ctx.response_class
    if ctx.api_version >= 8:
        return EncodedBody(
            offset_fetch.encode(
                [
                    (group_id, GROUP_AUTHORIZATION_FAILED, [])
                    if not allowed(ctx, Op.DESCRIBE, GROUP, group_id)
                    else (group_id, 0, _answers(ctx, group_id, topics, request.require_stable))
                    for group_id, topics in _groups_once(request.groups)
                ]
            ),
            flexible=True,
        )
    if not allowed(ctx, Op.DESCRIBE, GROUP, request.group_id):
        # Kafka's error response: the top-level code (v2+), and v1's partitions each carrying it.
        T = cls.OffsetFetchResponseTopic
        return ctx.response(
            throttle_time_ms=0,
            error_code=GROUP_AUTHORIZATION_FAILED,
            topics=[
                T(
                    name=name,
                    partitions=[
                        T.OffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=-1,
                            metadata="",
                            error_code=GROUP_AUTHORIZATION_FAILED,
                        )
                        for p in partitions
                    ],
                )
                for name, partitions in _partitions_once(request.topics or []).items()
            ]
            if ctx.api_version < 2
            else [],
        )
    require_stable = ctx.api_version >= 7 and bool(request.require_stable)
    return ctx.response(
        throttle_time_ms=0,
        error_code=0,
        topics=_topics(
            cls.OffsetFetchResponseTopic,
            cls.OffsetFetchResponseTopic.OffsetFetchResponsePartition,
            _answers(ctx, request.group_id, request.topics, require_stable),
        ),
    )


register(API_KEY, 1, 9, handle)
