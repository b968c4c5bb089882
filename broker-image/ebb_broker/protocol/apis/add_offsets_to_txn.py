"""AddOffsetsToTxn: v0-3 (API key 25)

Behaviour:
- Adds the group's `__consumer_offsets` partition to the producer's transaction, so its
  TxnOffsetCommit offsets are committed or aborted with it (KIP-98). Errors as AddPartitionsToTxn.
- Needs WRITE on the TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the
  GROUP (else GROUP_AUTHORIZATION_FAILED), as Kafka's KafkaApis.

Version notes:
- v1: no change. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before, KIP-588). v3: flexible.
- v4 (KIP-890 transaction version 2) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import AddOffsetsToTxnRequest

from ebb_broker.protocol.authz import (
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed,
)
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator

API_KEY = 25


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> Any:
    if not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not allowed(ctx, Op.READ, GROUP, request.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_AUTHORIZATION_FAILED)
    error = transaction_coordinator(ctx).add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
    )
    return ctx.response(throttle_time_ms=0, error_code=fenced_as(error, ctx.api_version, 2))


register(API_KEY, 0, 3, handle)
