"""DeleteRecords: v0-2 (API key 21)

Behaviour:
- KIP-107: moves each partition's log start offset (low watermark) to the requested offset, answers
  the new low watermark; offset -1 means the high watermark, read under the partition's lock with the
  move (`LogManager.delete_records`), so a produce cannot come between. Deletion is idempotent and never
  moves the low watermark backwards: an offset below it answers the current one.
- Per-partition errors as Kafka returns them: OFFSET_OUT_OF_RANGE above the high watermark (or
  below -1), POLICY_VIOLATION on a topic whose cleanup.policy lacks `delete`,
  UNKNOWN_TOPIC_OR_PARTITION for unknown partitions; low_watermark -1 with any error.
- Needs DELETE on each TOPIC (KIP-107): else its partitions TOPIC_AUTHORIZATION_FAILED with
  low_watermark -1, and nothing of them is deleted.
- Internal topics answer INVALID_TOPIC_EXCEPTION ("Cannot delete records of internal topic"), as
  Kafka's ReplicaManager.
- A partition the request names more than once is answered once, with the last offset given (Kafka
  keys the request by partition).
- Segments wholly below the new low watermark are removed by the next retention pass.

Version notes:
- v1: no change. v2: flexible.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.errors import InvalidTopicError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from kafka.protocol.admin.topics import DeleteRecordsRequest

from ebb_broker.log import RecordsDeleted
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, has_partition

API_KEY = 21


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> Any:
    # The moved log start offsets are fsynced to log-start-offset-checkpoint before the answer (so an
    # acknowledged deletion survives kill -9): that disk work runs off the event loop.
    return await asyncio.to_thread(_delete, ctx, request)


def _delete(ctx: RequestContext, request: DeleteRecordsRequest) -> Any:
    logs = ctx.broker.logs
    topics = logs.topics()
    cls = ctx.response_class
    T = cls.DeleteRecordsTopicResult
    P = T.DeleteRecordsPartitionResult
    wanted, _repeated = partitions_once(
        request.topics, lambda t: t.name, lambda t: t.partitions, lambda p: p.partition_index
    )
    undeletable = denied(ctx, Op.DELETE, TOPIC, wanted)
    refused: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], int] = {}  # -1 stays -1: the log reads its high watermark under its lock
    for name, partitions in wanted.items():
        for index, p in partitions.items():
            if name in undeletable:
                refused[(name, index)] = TOPIC_AUTHORIZATION_FAILED
            elif not has_partition(topics, name, index):
                refused[(name, index)] = UnknownTopicOrPartitionError.errno
            elif name in INTERNAL_TOPICS:  # "Cannot delete records of internal topic" (no message field)
                refused[(name, index)] = InvalidTopicError.errno
            elif p.offset < -1:
                refused[(name, index)] = OffsetOutOfRangeError.errno
            else:
                offsets[(name, index)] = p.offset
    results = logs.delete_records(offsets)  # one fsynced checkpoint for the whole request
    deleted = 0
    out = []
    for name, partitions in wanted.items():
        parts = []
        for index in partitions:
            result = results.get((name, index))
            if isinstance(result, RecordsDeleted):
                deleted += result.count
                parts.append(P(partition_index=index, low_watermark=result.low_watermark, error_code=0))
            else:
                err = refused[(name, index)] if result is None else error_code(result)
                parts.append(P(partition_index=index, low_watermark=-1, error_code=err))
        out.append(T(name=name, partitions=parts))
    ctx.broker.metrics.records_deleted.labels("delete_records").inc(deleted)
    return ctx.response(throttle_time_ms=0, topics=out)


register(API_KEY, 0, 2, handle)
