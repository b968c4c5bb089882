"""ListOffsets: v1-7 (API key 2)

Behaviour:
- Timestamp -2 (EARLIEST) answers the log start offset (KIP-107), -1 (LATEST) the high
  watermark, -3 (MAX_TIMESTAMP, KIP-734) the first record carrying the largest timestamp (as
  Kafka 4: from the segment's offsetOfMaxTimestamp, rebuilt from batch headers after a restart,
  then the batch decoded); any other
  timestamp the first offset whose timestamp is at or after it (the time index), or offset -1
  and timestamp -1 when no record is that recent.
- With isolation level read_committed (v2+), LATEST answers the last stable offset (KIP-98).
- Errors are per partition. Needs DESCRIBE on each TOPIC (else TOPIC_AUTHORIZATION_FAILED).
- A partition the request names more than once gets one answer, INVALID_REQUEST, as Kafka's
  ReplicaManager answers its `duplicatePartitions`.

Version notes:
- v1: single offset and timestamp (v0's offset arrays are not advertised).
- v2: isolation level. v4: leader epoch.
- v6: flexible. v7: MAX_TIMESTAMP. v8+ (-4 local / -5 tiered) are not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition

API_KEY = 2
LATEST = -1
READ_COMMITTED = 1


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> Any:
    logs = ctx.broker.logs
    topics = logs.topics()
    cls = ctx.response_class
    T = cls.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    read_committed = ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
    wanted, repeated = partitions_once(
        request.topics, lambda t: t.name, lambda t: t.partitions, lambda p: p.partition_index
    )
    hidden = denied(ctx, Op.DESCRIBE, TOPIC, wanted)
    out = []
    for name, partitions in wanted.items():
        parts = []
        for index, p in partitions.items():
            err, offset, ts = 0, -1, -1
            if name in hidden:
                err = TOPIC_AUTHORIZATION_FAILED
            elif (name, index) in repeated:  # Kafka's duplicatePartitions: one answer, nothing looked up
                err = InvalidRequestError.errno
            elif not has_partition(topics, name, index):
                err = UnknownTopicOrPartitionError.errno
            else:
                try:
                    plog = logs.get_log(name, index)
                    if read_committed and p.timestamp == LATEST:
                        offset, ts = plog.last_stable_offset, -1
                    else:
                        found = plog.offset_for_timestamp(p.timestamp)
                        if found is not None:
                            offset, ts = found
                except LogError as exc:
                    err = error_code(exc)
            parts.append(
                P(
                    partition_index=index,
                    error_code=err,
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=0 if found_ok(err, offset) else -1,
                )
            )
        out.append(T(name=name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)


def found_ok(err: int, offset: int) -> bool:
    return err == 0 and offset >= 0


register(API_KEY, 1, 7, handle)
