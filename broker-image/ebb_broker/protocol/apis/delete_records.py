"""DeleteRecords: v0-2 (API key 21)

Behaviour:
- KIP-107: moves each partition's log start offset (low watermark) to the requested offset, answers
  the new low watermark; offset -1 means the high watermark. Deletion is idempotent and never
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

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import INTERNAL_TOPICS, has_partition

API_KEY = 21


async def handle(ctx: RequestContext, request: Any) -> Any:
    # The moved log start offsets are fsynced to log-start-offset-checkpoint before the answer (so an
    # acknowledged deletion survives kill -9): that disk work runs off the event loop.
    return await asyncio.to_thread(_delete, ctx, request)


def _delete(ctx: RequestContext, request: Any) -> Any:
    logs = ctx.broker.logs
    topics = logs.topics()
    cls = ctx.response_class
    T = cls.DeleteRecordsTopicResult
    P = T.DeleteRecordsPartitionResult
    wanted, _repeated = partitions_once(
        request.topics, lambda t: t.name, lambda t: t.partitions, lambda p: p.partition_index
    )
    undeletable = denied(ctx, Op.DELETE, TOPIC, wanted)
    out = []
    with logs.one_log_start_checkpoint():  # one fsynced checkpoint for the whole request
        for name, partitions in wanted.items():
            parts = []
            for index, p in partitions.items():
                err, low = 0, -1
                if name in undeletable:
                    err = TOPIC_AUTHORIZATION_FAILED
                elif not has_partition(topics, name, index):
                    err = UnknownTopicOrPartitionError.errno
                elif name in INTERNAL_TOPICS:  # "Cannot delete records of internal topic" (no message field)
                    err = InvalidTopicError.errno
                elif p.offset < -1:
                    err = OffsetOutOfRangeError.errno
                else:
                    plog = logs.get_log(name, index)
                    before = plog.log_start_offset
                    try:
                        low = plog.delete_records(plog.high_watermark if p.offset == -1 else p.offset)
                        ctx.broker.metrics.records_deleted.labels("delete_records").inc(max(low - before, 0))
                    except LogError as exc:
                        err, low = error_code(exc), -1
                parts.append(P(partition_index=index, low_watermark=low, error_code=err))
            out.append(T(name=name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)


register(API_KEY, 0, 2, handle)
