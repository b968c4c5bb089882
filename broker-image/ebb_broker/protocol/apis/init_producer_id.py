"""InitProducerId: v0-4 (API key 22)

Behaviour:
- Idempotent producers (null transactional id) get a fresh producer id with epoch 0; ids are
  never reused across restarts (see coordinator/producer_ids.py).
- A producer re-initialising with its current id and epoch (v3+, KIP-360) gets the epoch bumped.
- A transactional id is refused with INVALID_REQUEST: transactions are not implemented.

Version notes:
- v2: flexible. v3: producer id/epoch in the request (KIP-360). v4: PRODUCER_FENCED code.
- v5-6 (KIP-890/939 two-phase commit) are not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import InvalidRequestError

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 22
_MAX_EPOCH = 32767


async def handle(ctx: RequestContext, request: Any) -> Any:
    if request.transactional_id is not None:
        return ctx.response(
            throttle_time_ms=0, error_code=InvalidRequestError.errno, producer_id=-1, producer_epoch=-1
        )
    pid, epoch = -1, -1
    if ctx.api_version >= 3 and request.producer_id >= 0 and 0 <= request.producer_epoch < _MAX_EPOCH - 1:
        pid, epoch = request.producer_id, request.producer_epoch + 1
    else:
        pid, epoch = ctx.broker.producer_ids.next_id(), 0
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)


register(API_KEY, 0, 4, handle)
