"""Fetch: v4-12 (API key 1)

Behaviour:
- Whole batches from the one containing the fetch offset (the engine's read). KIP-74 limits, as
  Kafka's ReplicaManager applies them: each partition gets at most `partition_max_bytes` and the
  response at most `max_bytes` in total, partitions taking from that budget in request order; the
  first partition that has records gets at least its first whole batch even when that exceeds
  either limit (so a consumer never stalls on a large batch); after it, a partition whose first
  batch does not fit what is left answers no records rather than a partial batch. The last batch
  of a partition may be cut short by the limit, as in Kafka (clients drop the incomplete tail).
- A fetch below the log start offset, or above the log end offset, gets OFFSET_OUT_OF_RANGE;
  every partition carries log_start_offset (KIP-107) so consumers see the low watermark move.
- Record bytes go from the segment files to the socket with os.sendfile (zero_copy.py).
- Long poll: when fewer than min_bytes are available the response waits for a produce or
  max_wait_ms, whichever comes first.
- Sessions (KIP-227) are not created: session id 0 in the response tells the client to keep
  sending full fetch requests, which every client supports.
- read_committed (KIP-98) reads up to the last stable offset (the first offset of the oldest open
  transaction) and gets the aborted transactions overlapping what it read (from the segments'
  .txnindex), so the client drops their records; read_uncommitted reads up to the high watermark.
  Every partition reports its last stable offset.
- Needs READ on each TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED, no records).

Version notes:
- v3 (KIP-74): request-level max_bytes (v4 is the lowest served).
- v4: isolation level, last stable offset, aborted transactions.
- v5: log start offset. v7: sessions (answered sessionless). v9: current leader epoch (ignored).
- v11: rack id / preferred read replica (-1). v12: flexible, diverging epoch (not computed).
- v13+ (topic ids) is not advertised.
"""

from __future__ import annotations

import time
from typing import Any

from kafka.errors import UnknownTopicOrPartitionError

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition
from ebb_broker.protocol.zero_copy import FileRecords, ZeroCopyResponse

API_KEY = 1
READ_COMMITTED = 1


def _read_all(ctx: RequestContext, request: Any) -> tuple[list[Any], int, list[FileRecords]]:
    broker = ctx.broker
    cls = ctx.response_class
    T = cls.FetchableTopicResponse
    P = T.PartitionData
    topics = broker.logs.topics()
    unreadable = denied(ctx, Op.READ, TOPIC, (t.topic for t in request.topics))
    budget = request.max_bytes
    read_committed = request.isolation_level == READ_COMMITTED
    # KIP-74: until a partition returned records, the next one may exceed the limits by its first batch.
    min_one = True
    total = 0
    responses = []
    files: list[FileRecords] = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            err, hw, start, records, size = 0, -1, -1, b"", 0
            lso, aborted = -1, []
            if t.topic in unreadable:
                err = TOPIC_AUTHORIZATION_FAILED
            elif not has_partition(topics, t.topic, p.partition):
                err = UnknownTopicOrPartitionError.errno
            else:
                plog = broker.logs.get_log(t.topic, p.partition)
                lso = plog.last_stable_offset
                try:
                    limit = max(min(p.partition_max_bytes, budget), 0)
                    if limit > 0 or min_one:
                        result = plog.read(
                            p.fetch_offset,
                            limit,
                            max_offset=lso if read_committed else None,
                            min_one_message=min_one,
                        )
                        if read_committed and result.slices:
                            aborted = [
                                P.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                                for a in plog.collect_aborted_transactions(p.fetch_offset, lso)
                            ]
                        hw, start = result.high_watermark, result.log_start_offset
                        if result.slices:
                            fr = FileRecords(list(result.slices))
                            files.append(fr)
                            records, size = fr.placeholder(), fr.length
                    else:
                        hw, start = plog.high_watermark, plog.log_start_offset
                except LogError as exc:
                    err = error_code(exc)
                    hw, start = plog.high_watermark, plog.log_start_offset
            if size:
                min_one = False
            total += size
            budget = max(budget - size, 0)
            parts.append(
                P(
                    partition_index=p.partition,
                    error_code=err,
                    high_watermark=hw,
                    last_stable_offset=lso if lso >= 0 else hw,
                    log_start_offset=start,
                    aborted_transactions=aborted,
                    preferred_read_replica=-1,
                    records=records,
                )
            )
        responses.append(T(topic=t.topic, partitions=parts))
    return responses, total, files


async def handle(ctx: RequestContext, request: Any) -> Any:
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        responses, total, files = _read_all(ctx, request)
        errors = any(p.error_code for t in responses for p in t.partitions)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or errors or remaining <= 0:
            break
        for fr in files:
            fr.close()
        await ctx.broker.appended.wait(remaining)
    body = ctx.response(throttle_time_ms=0, error_code=0, session_id=0, responses=responses)
    return ZeroCopyResponse(body, files) if files else body


register(API_KEY, 4, 12, handle)
