"""OffsetCommit: v2-9 (API key 8)

Behaviour:
- Generation -1 with an empty member id commits for an empty (or unknown) group, as the admin
  client and standalone consumers do; otherwise the member and generation must be current
  (ILLEGAL_GENERATION for an older generation, FENCED_INSTANCE_ID for a stale static member id,
  REBALANCE_IN_PROGRESS while the group completes a rebalance). A member's commit keeps its
  session alive.
- Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the rest are written to
  `__consumer_offsets` (OffsetCommitValue v3) in one batch before the response.
- Needs READ on the GROUP (else every partition GROUP_AUTHORIZATION_FAILED, nothing committed) and
  READ on each TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED), as Kafka's KafkaApis.
- Metadata longer than offset.metadata.max.bytes (4096) gets OFFSET_METADATA_TOO_LARGE.

Version notes:
- v2-4: retention time, ignored: offsets expire by offsets.retention.minutes (KIP-211).
- v9: GROUP_ID_NOT_FOUND for a member's commit to an unknown group (ILLEGAL_GENERATION before).
- v3: throttle time. v6: leader epoch. v7: group instance id. v8: flexible.
- v10 (topic ids) is not advertised.
"""

from __future__ import annotations

import time
from typing import Any

from kafka.protocol.consumer.group import OffsetCommitRequest

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC,
    Op,
    allowed,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.offset_commits import checked_commits
from ebb_broker.protocol.registry import register

API_KEY = 8


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> Any:
    groups = ctx.broker.groups
    topics = ctx.broker.logs.topics()
    # READ on the GROUP first (else every partition GROUP_AUTHORIZATION_FAILED), then READ per TOPIC.
    group_error = (
        groups.offsets.validate_commit(
            request.group_id,
            request.generation_id_or_member_epoch,
            request.member_id or "",
            request.group_instance_id if ctx.api_version >= 7 else None,
            ctx.api_version,
        )
        if allowed(ctx, Op.READ, GROUP, request.group_id)
        else GROUP_AUTHORIZATION_FAILED
    )
    unreadable = denied(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    commits, errors = checked_commits(
        request.topics,
        error=group_error,
        unreadable=unreadable,
        topics=topics,
        metadata_max_bytes=groups.config.offset_metadata_max_bytes,
        with_leader_epoch=ctx.api_version >= 6,
        now_ms=int(time.time() * 1000),
    )
    if commits:
        groups.offsets.commit(request.group_id, commits)
    cls = ctx.response_class
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            cls.OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    cls.OffsetCommitResponseTopic.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=errors[(t.name, p.partition_index)]
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


register(API_KEY, 2, 9, handle)
