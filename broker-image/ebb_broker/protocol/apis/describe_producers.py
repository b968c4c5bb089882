"""DescribeProducers: v0 (API key 61)

Behaviour:
- The producers a partition knows (KIP-664, `kafka-transactions.sh describe-producers` and
  `find-hanging`): producer id, epoch, last sequence and timestamp, and the first offset of its open
  transaction (-1 when none). Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION.
- Needs READ on each TOPIC (else its partitions TOPIC_AUTHORIZATION_FAILED), as Kafka's KafkaApis.
- The coordinator epoch is the one of the last marker (-1 before any).
- A partition the request repeats is answered once (protocol/duplicates.py).

Version notes:
- v0 only.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import UnknownTopicOrPartitionError
from kafka.protocol.admin.transactions import DescribeProducersRequest

from ebb_broker.protocol.authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, denied
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition

API_KEY = 61


async def handle(ctx: RequestContext, request: DescribeProducersRequest) -> Any:
    logs = ctx.broker.logs
    topics = logs.topics()
    cls = ctx.response_class
    T = cls.TopicResponse
    P = T.PartitionResponse
    S = P.ProducerState
    wanted, _repeated = partitions_once(
        request.topics, lambda t: t.name, lambda t: t.partition_indexes, lambda p: p
    )
    unreadable = denied(ctx, Op.READ, TOPIC, wanted)
    out = []
    for name, partitions in wanted.items():
        parts = []
        for p in partitions:
            refused = (
                TOPIC_AUTHORIZATION_FAILED
                if name in unreadable
                else (0 if has_partition(topics, name, p) else UnknownTopicOrPartitionError.errno)
            )
            if refused:
                parts.append(
                    P(
                        partition_index=p,
                        error_code=refused,
                        error_message=None,
                        active_producers=[],
                    )
                )
                continue
            producers = logs.get_log(name, p).producers()
            parts.append(
                P(
                    partition_index=p,
                    error_code=0,
                    error_message=None,
                    active_producers=[
                        S(
                            producer_id=pid,
                            producer_epoch=e.epoch,
                            last_sequence=e.batches[-1].last_seq if e.batches else -1,
                            last_timestamp=e.last_timestamp,
                            coordinator_epoch=e.coordinator_epoch,
                            current_txn_start_offset=e.txn_first_offset
                            if e.txn_first_offset is not None
                            else -1,
                        )
                        for pid, e in sorted(producers.items())
                    ],
                )
            )
        out.append(T(name=name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)


register(API_KEY, 0, 0, handle)
