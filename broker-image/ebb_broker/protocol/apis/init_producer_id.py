"""InitProducerId: v0-4 (API key 22)

Behaviour:
- Idempotent producers (null transactional id) get a fresh producer id with epoch 0; ids are
  never reused across restarts (see coordinator/producer_ids.py).
- A producer re-initialising with its current id and epoch (v3+, KIP-360) gets the epoch bumped.
- A transactional id (KIP-98) goes to the transaction coordinator: a new id gets a producer id and
  epoch 0, a known one the next epoch (fencing the previous instance and aborting its open
  transaction); INVALID_TRANSACTION_TIMEOUT beyond transaction.max.timeout.ms.
- Authorization: WRITE on the TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an
  idempotent producer needs IDEMPOTENT_WRITE on the CLUSTER or WRITE on any TOPIC (KIP-679; else
  CLUSTER_AUTHORIZATION_FAILED).

Version notes:
- v2: flexible. v3: producer id/epoch in the request (KIP-360). v4: PRODUCER_FENCED code
  (INVALID_PRODUCER_EPOCH before).
- v5-6 (KIP-890/939 two-phase commit) are not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdRequest

from ebb_broker.protocol.authz import (
    CLUSTER,
    CLUSTER_AUTHORIZATION_FAILED,
    TOPIC,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
    allowed_on_any,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import fenced_as, with_state_topic

API_KEY = 22
_MAX_EPOCH = 32767


def _refused(ctx: RequestContext, transactional_id: str | None) -> int:
    """WRITE on the TRANSACTIONAL_ID; an idempotent producer needs IDEMPOTENT_WRITE on the CLUSTER or
    WRITE on any TOPIC (KIP-679), as Kafka's KafkaApis."""
    if transactional_id is not None:
        ok = allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, transactional_id)
        return 0 if ok else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if allowed(ctx, Op.IDEMPOTENT_WRITE, CLUSTER) or allowed_on_any(ctx, Op.WRITE, TOPIC):
        return 0
    return CLUSTER_AUTHORIZATION_FAILED


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> Any:
    refused = _refused(ctx, request.transactional_id)
    if refused:
        return ctx.response(throttle_time_ms=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        v3 = ctx.api_version >= 3
        txn = await with_state_topic(ctx)
        result = txn.init_producer_id(
            request.transactional_id,
            request.transaction_timeout_ms,
            request.producer_id if v3 else -1,
            request.producer_epoch if v3 else -1,
        )
        return ctx.response(
            throttle_time_ms=0,
            error_code=fenced_as(result.error, ctx.api_version, 4),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )
    pid, epoch = -1, -1
    if ctx.api_version >= 3 and request.producer_id >= 0 and 0 <= request.producer_epoch < _MAX_EPOCH - 1:
        pid, epoch = request.producer_id, request.producer_epoch + 1
    else:
        pid, epoch = ctx.broker.producer_ids.next_id(), 0
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)


register(API_KEY, 0, 4, handle)
