"""OffsetDelete: v0 (API key 47)

Behaviour:
- Deletes committed offsets of a group (KIP-496) with tombstones in `__consumer_offsets`.
- Per partition, GROUP_SUBSCRIBED_TO_TOPIC when a live member subscribes to the topic; an unknown
  group answers GROUP_ID_NOT_FOUND at the top level.

Version notes:
- v0 only.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import GroupIdNotFoundError

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 47


async def handle(ctx: RequestContext, request: Any) -> Any:
    groups = ctx.broker.groups
    if request.group_id not in groups.groups:
        return ctx.response(error_code=GroupIdNotFoundError.errno, throttle_time_ms=0, topics=[])
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    result = groups.delete_offsets(request.group_id, wanted)
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
