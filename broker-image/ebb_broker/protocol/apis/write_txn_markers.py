"""WriteTxnMarkers: v1 (API key 27)

Behaviour:
- Writes a COMMIT or ABORT marker (a control batch) for a producer into each listed partition, as
  Kafka's KafkaApis.handleWriteTxnMarkersRequest: the request a transaction coordinator sends to
  partition leaders, and the one `kafka-transactions.sh abort` (Admin.abortTransaction, KIP-664)
  sends to end a hanging transaction. On one node ebb-broker's own coordinator writes its markers
  directly, so this API serves the tool: the marker ends the producer's open transaction in that
  partition, and read_committed consumers get past it (the last stable offset moves).
- A marker on a `__consumer_offsets` partition also makes the producer's pending transactional
  offsets of that partition's groups committed (COMMIT) or drops them (ABORT).
- Needs CLUSTER_ACTION on the CLUSTER (Kafka's inter-broker permission; `kafka-transactions.sh abort`
  needs it too): without it every partition answers CLUSTER_AUTHORIZATION_FAILED.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for an unknown one; INVALID_PRODUCER_EPOCH for an
  epoch older than the producer's; TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than
  the last marker's. A marker for a producer without an open transaction there is written and ends
  an empty one, as in Kafka. The transaction coordinator's own state is not changed: a transaction
  it still tracks writes its markers again when it ends (they end nothing more).

Version notes:
- v0 was removed in Kafka 4.0; v1 is flexible.
- v2 (KIP-1228: the marker's transaction version) is not advertised: transaction version 2 is not
  offered (see end_txn).
"""

from __future__ import annotations

import logging
from typing import Any

from kafka.errors import UnknownTopicOrPartitionError
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition
from ebb_formats.consumer_offsets import OFFSETS_TOPIC

API_KEY = 27
log = logging.getLogger(__name__)


def _write(ctx: RequestContext, marker: Any, topic: str, partition: int, topics: Any) -> int:
    if not has_partition(topics, topic, partition):
        return int(UnknownTopicOrPartitionError.errno)
    commit = bool(marker.transaction_result)
    try:
        ctx.broker.logs.get_log(topic, partition).append_marker(
            marker.producer_id,
            marker.producer_epoch,
            commit=commit,
            coordinator_epoch=marker.coordinator_epoch,
        )
    except LogError as exc:
        return error_code(exc)
    if topic == OFFSETS_TOPIC:
        ctx.broker.groups.offsets.complete_txn_offsets(marker.producer_id, partition, commit=commit)
    log.info(
        "%s marker for producer %d epoch %d written to %s-%d (WriteTxnMarkers)",
        "COMMIT" if commit else "ABORT",
        marker.producer_id,
        marker.producer_epoch,
        topic,
        partition,
    )
    return 0


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> Any:
    cls = ctx.response_class
    M = cls.WritableTxnMarkerResult
    T = M.WritableTxnMarkerTopicResult
    P = T.WritableTxnMarkerPartitionResult
    may = allowed(ctx, Op.CLUSTER_ACTION, CLUSTER)
    topics = ctx.broker.logs.topics()
    results = []
    wrote: list[tuple[str, int]] = []
    for marker in request.markers:
        out_topics = []
        for t in marker.topics:
            parts = []
            for p in t.partition_indexes:
                err = _write(ctx, marker, t.name, p, topics) if may else CLUSTER_AUTHORIZATION_FAILED
                if err == 0:
                    wrote.append((t.name, p))
                parts.append(P(partition_index=p, error_code=err))
            out_topics.append(T(name=t.name, partitions=parts))
        results.append(M(producer_id=marker.producer_id, topics=out_topics))
    ctx.broker.fetches.complete(wrote)  # markers move the last stable offset: wake read_committed fetches
    return ctx.response(markers=results)


register(API_KEY, 1, 1, handle)
