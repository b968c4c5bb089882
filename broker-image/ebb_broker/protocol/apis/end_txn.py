"""EndTxn: v0-3 (API key 26)

Behaviour:
- Commits or aborts the producer's transaction: PrepareCommit/PrepareAbort is stored in
  `__transaction_state`, a COMMIT/ABORT marker is written to every partition of the transaction (and
  to `__consumer_offsets` for its offsets), then CompleteCommit/CompleteAbort. On one node all of
  it happens before the answer.
- A retried EndTxn of the outcome already reached answers NONE; the opposite outcome, or an EndTxn
  without a transaction, INVALID_TXN_STATE. PRODUCER_FENCED for an old epoch.
- Needs WRITE on the TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

Version notes:
- v1: no change. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before, KIP-588). v3: flexible.
- v4-5 (KIP-890 transaction version 2) are not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import EndTxnRequest

from ebb_broker.protocol.authz import TRANSACTIONAL_ID, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.transactions import fenced_as, transaction_coordinator

API_KEY = 26


async def handle(ctx: RequestContext, request: EndTxnRequest) -> Any:
    if not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = transaction_coordinator(ctx)
    meta = coordinator.txns.get(request.transactional_id)
    in_txn = set(meta.partitions) if meta is not None else set()
    error = coordinator.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed)
    )
    if not error:
        ctx.broker.fetches.complete(in_txn)  # markers move the last stable offset: wake read_committed
    return ctx.response(throttle_time_ms=0, error_code=fenced_as(error, ctx.api_version, 2))


register(API_KEY, 0, 3, handle)
