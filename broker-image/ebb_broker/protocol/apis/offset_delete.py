"""OffsetDelete: v0 (API key 47)

Behaviour:
- Deletes committed offsets of a group (KIP-496) with tombstones in `__consumer_offsets`.
- Needs DELETE on the GROUP (else GROUP_AUTHORIZATION_FAILED at the top level, nothing deleted)
  and READ on each TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED, their offsets kept).
- Per partition, GROUP_SUBSCRIBED_TO_TOPIC when the group's members subscribe to the topic; an
  unknown group answers GROUP_ID_NOT_FOUND and a non-empty group of another protocol type
  NON_EMPTY_GROUP at the top level.

Version notes:
- v0 only.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import OffsetDeleteRequest

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

API_KEY = 47


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> Any:
    if not allowed(ctx, Op.DELETE, GROUP, request.group_id):
        return ctx.response(error_code=GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
    unreadable = denied(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    wanted = [
        (t.name, p.partition_index) for t in request.topics for p in t.partitions if t.name not in unreadable
    ]
    error, result = ctx.broker.groups.offsets.delete_offsets(request.group_id, wanted)
    if error:
        return ctx.response(error_code=error, throttle_time_ms=0, topics=[])
    result.update(
        {
            (t.name, p.partition_index): TOPIC_AUTHORIZATION_FAILED
            for t in request.topics
            for p in t.partitions
            if t.name in unreadable
        }
    )
    cls = ctx.response_class
    T = cls.OffsetDeleteResponseTopic
    return ctx.response(
        error_code=0,
        throttle_time_ms=0,
        topics=[
            T(
                name=t.name,
                partitions=[
                    T.OffsetDeleteResponsePartition(
                        partition_index=p.partition_index, error_code=result[(t.name, p.partition_index)]
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


register(API_KEY, 0, 0, handle)
