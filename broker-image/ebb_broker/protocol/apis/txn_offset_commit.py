"""TxnOffsetCommit: v0-3 (API key 28)

Behaviour:
- Commits consumer offsets inside the producer's transaction (KIP-98; the consumer group's member
  and generation since v3, KIP-447): the group's `__consumer_offsets` partition must have been added
  with AddOffsetsToTxn (INVALID_TXN_STATE otherwise), the producer be current (PRODUCER_FENCED,
  INVALID_PRODUCER_ID_MAPPING) and, when a generation is given, the member current
  (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
- The offsets are written to `__consumer_offsets` as a transactional batch of the producer and stay
  pending: OffsetFetch and consumed retention (KIP-68) see them only after the COMMIT marker, never
  after an ABORT.
- Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION; metadata over offset.metadata.max.bytes
  OFFSET_METADATA_TOO_LARGE.
- Needs WRITE on the TRANSACTIONAL_ID (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
  READ on the GROUP (else every partition GROUP_AUTHORIZATION_FAILED) and READ on each TOPIC (else
  its partitions TOPIC_AUTHORIZATION_FAILED), as Kafka's KafkaApis; nothing refused is written.

Version notes:
- v1: no change. v2: committed leader epoch. v3: generation, member id, group instance id, flexible;
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before, KIP-588).
- v4-5 (TRANSACTION_ABORTABLE, KIP-890 transaction version 2) are not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import TxnOffsetCommitRequest

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
    denied,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.offset_commits import checked_commits
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator
from ebb_formats.consumer_offsets import OFFSETS_TOPIC

API_KEY = 28


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> Any:
    groups = ctx.broker.groups
    txn = transaction_coordinator(ctx)
    offsets_tp = (OFFSETS_TOPIC, groups.store.partition_for(request.group_id))
    unreadable: set[str] = set()
    if not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        error = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not allowed(ctx, Op.READ, GROUP, request.group_id):
        error = GROUP_AUTHORIZATION_FAILED
    else:
        unreadable = denied(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
        error = txn.verify(request.transactional_id, request.producer_id, request.producer_epoch, offsets_tp)
    if not error:
        v3 = ctx.api_version >= 3
        error = groups.offsets.validate_txn_commit(
            request.group_id,
            request.generation_id if v3 else -1,
            (request.member_id or "") if v3 else "",
            request.group_instance_id if v3 else None,
        )
    error = fenced_as(error, ctx.api_version, 3)
    topics = ctx.broker.logs.topics()
    commits, errors = checked_commits(
        request.topics,
        error=error,
        unreadable=unreadable,
        topics=topics,
        metadata_max_bytes=groups.config.offset_metadata_max_bytes,
        with_leader_epoch=ctx.api_version >= 2,
        now_ms=txn.timer.now_ms(),
    )
    if commits:
        groups.offsets.txn_commit(request.group_id, request.producer_id, request.producer_epoch, commits)
    cls = ctx.response_class
    T = cls.TxnOffsetCommitResponseTopic
    P = T.TxnOffsetCommitResponsePartition
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            T(
                name=t.name,
                partitions=[
                    P(partition_index=p.partition_index, error_code=errors[(t.name, p.partition_index)])
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


register(API_KEY, 0, 3, handle)
