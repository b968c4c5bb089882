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
- A partition named more than once is read once (Kafka's FetchRequest.fetchData is a map): it keeps
  the place it first appeared at, with the last entry's offset and limit, and is answered once.
- The response is capped by the broker's `fetch.max.bytes` (and `min_bytes` by that cap), as Kafka's
  KafkaApis caps it.
- Record bytes go from the segment files to the socket with os.sendfile (zero_copy.py), from the
  segments' own descriptors, so a response opens no file of its own.
- Long poll: when fewer than min_bytes are available the fetch parks in the purgatory (purgatory.py)
  until a produce appends to one of its partitions or max_wait_ms passes. max_wait_ms is taken as
  sent (Kafka does not cap it); a parked fetch is idleness for `connections.max.idle.ms`, which closes
  the connection and drops the fetch, as Kafka's Selector closes a channel with no I/O.
- Sessions (KIP-227) are not created: session id 0 in the response tells the client to keep
  sending full fetch requests, which every client supports.
- read_committed (KIP-98) reads up to the last stable offset (the first offset of the oldest open
  transaction) and gets the aborted transactions overlapping what it read (from the segments'
  .txnindex), so the client drops their records; read_uncommitted reads up to the high watermark.
  Every partition reports its last stable offset.
- Needs READ on each TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED, no records).
- Client quotas (KIP-13, KIP-219), as Kafka's KafkaApis: `max_bytes` is capped by what the client's
  `consumer_byte_rate` allows in one quota window; the record bytes read count against it, and over it
  the answer has no partitions, carries `throttle_time_ms`, and the connection is muted for that long
  (the bytes not sent are taken back from the rate). Kafka counts the whole response's size; Ebb counts
  the record bytes.

Version notes:
- v3 (KIP-74): request-level max_bytes (v4 is the lowest served).
- v4: isolation level, last stable offset, aborted transactions.
- v5: log start offset. v7: sessions (answered sessionless). v9: current leader epoch (ignored).
- v11: rack id / preferred read replica (-1). v12: flexible, diverging epoch (not computed).
- v13+ (topic ids) is not advertised.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import UnknownTopicOrPartitionError
from kafka.protocol.consumer.fetch import FetchRequest

from ebb_broker.log import FetchSlice
from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.purgatory import TopicPartition
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition
from ebb_broker.protocol.zero_copy import FileRecords, ZeroCopyResponse
from ebb_broker.quota.manager import INT32_MAX, user_of

API_KEY = 1
READ_COMMITTED = 1


@dataclass
class _Read:
    """What one partition's read found; its slices become FileRecords only for the response."""

    error: int = 0
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    aborted: list[Any] = field(default_factory=list)
    slices: list[FetchSlice] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(s.length for s in self.slices)

    @property
    def stable_offset(self) -> int:
        """The last stable offset to report: the high watermark when the partition was not read."""
        return self.last_stable_offset if self.last_stable_offset >= 0 else self.high_watermark


def fetch_data(request: FetchRequest) -> dict[TopicPartition, Any]:
    """The partitions to read, each once (Kafka's FetchRequest.fetchData, a LinkedHashMap): a partition
    named twice keeps the place it first appeared at and takes the last entry's offset and limit."""
    wanted: dict[TopicPartition, Any] = {}
    for t in request.topics:
        for p in t.partitions:
            wanted[t.topic, p.partition] = p
    return wanted


def _read_all(
    ctx: RequestContext, wanted: dict[TopicPartition, Any], max_bytes: int, read_committed: bool
) -> dict[TopicPartition, _Read]:
    broker = ctx.broker
    P = ctx.response_class.FetchableTopicResponse.PartitionData
    topics = broker.logs.topics()
    unreadable = denied(ctx, Op.READ, TOPIC, dict.fromkeys(t for t, _p in wanted))
    budget = max_bytes
    # KIP-74: until a partition returned records, the next one may exceed the limits by its first batch.
    min_one = True
    reads: dict[TopicPartition, _Read] = {}
    for (topic, partition), p in wanted.items():
        r = reads[topic, partition] = _Read()
        if topic in unreadable:
            r.error = TOPIC_AUTHORIZATION_FAILED
            continue
        if not has_partition(topics, topic, partition):
            r.error = UnknownTopicOrPartitionError.errno
            continue
        plog = broker.logs.get_log(topic, partition)
        r.last_stable_offset = lso = plog.last_stable_offset
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
                    r.aborted = [
                        P.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                        for a in plog.collect_aborted_transactions(p.fetch_offset, lso)
                    ]
                r.high_watermark, r.log_start_offset = result.high_watermark, result.log_start_offset
                r.slices = result.slices
            else:
                r.high_watermark, r.log_start_offset = plog.high_watermark, plog.log_start_offset
        except LogError as exc:
            r.error = error_code(exc)
            r.high_watermark, r.log_start_offset = plog.high_watermark, plog.log_start_offset
        if r.slices:
            min_one = False
        budget = max(budget - r.size, 0)
    return reads


def _response(ctx: RequestContext, reads: dict[TopicPartition, _Read]) -> Any:
    """The response, partitions in request order, a topic's consecutive partitions under one entry (Kafka's
    FetchResponse.toMessage); records stay in their segment files (zero_copy)."""
    T = ctx.response_class.FetchableTopicResponse
    P = T.PartitionData
    responses: list[Any] = []
    files: list[FileRecords] = []
    try:
        for (topic, partition), r in reads.items():
            records = b""
            if r.slices:
                fr = FileRecords(list(r.slices))
                files.append(fr)
                records = fr.placeholder()
            if not responses or responses[-1].topic != topic:
                responses.append(T(topic=topic, partitions=[]))
            responses[-1].partitions.append(
                P(
                    partition_index=partition,
                    error_code=r.error,
                    high_watermark=r.high_watermark,
                    last_stable_offset=r.stable_offset,
                    log_start_offset=r.log_start_offset,
                    aborted_transactions=r.aborted,
                    preferred_read_replica=-1,
                    records=records,
                )
            )
    except BaseException:
        for fr in files:
            fr.close()
        raise
    body = ctx.response(throttle_time_ms=0, error_code=0, session_id=0, responses=responses)
    return ZeroCopyResponse(body, files) if files else body


async def handle(ctx: RequestContext, request: FetchRequest) -> Any:
    quota = ctx.broker.quotas.fetch
    user, client_id = user_of(ctx.session.principal), ctx.client_id or ""
    # Kafka's KafkaApis: the response is capped by the broker's fetch.max.bytes and by what the client's
    # consumer_byte_rate allows in one quota window; min_bytes by that cap.
    in_window = quota.max_value_in_window(user, client_id)
    max_bytes = min(request.max_bytes, ctx.broker.config.fetch_max_bytes, int(min(in_window, INT32_MAX)))
    min_bytes = min(request.min_bytes, max_bytes)
    read_committed = request.isolation_level == READ_COMMITTED
    wanted = fetch_data(request)
    # max_wait_ms is taken as sent, as Kafka does; connections.max.idle.ms bounds a parked fetch.
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        reads = _read_all(ctx, wanted, max_bytes, read_committed)
        errors = any(r.error for r in reads.values())
        remaining = deadline - time.monotonic()
        size = sum(r.size for r in reads.values())
        if not wanted or size >= min_bytes or errors or remaining <= 0:
            ctx.throttle_ms = quota.record(user, client_id, size)
            if ctx.throttle_ms:
                # KIP-219 as Kafka's KafkaApis: a throttled fetch answers no records (so they are taken
                # back from the rate) and the connection is muted for the throttle time.
                quota.unrecord(user, client_id, size)
                return ctx.response(
                    throttle_time_ms=ctx.throttle_ms, error_code=0, session_id=0, responses=[]
                )
            return _response(ctx, reads)
        with ctx.activity.waiting():
            await ctx.broker.fetches.wait(wanted.keys(), remaining)


register(API_KEY, 4, 12, handle)
