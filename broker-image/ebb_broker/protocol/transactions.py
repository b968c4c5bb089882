"""What the transaction API modules share: the coordinator, and Kafka's error code by version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka.errors import InvalidProducerEpochError, ProducerFencedError

from ebb_broker.protocol.context import RequestContext

if TYPE_CHECKING:
    from ebb_broker.coordinator.transaction_coordinator import TransactionCoordinator


def transaction_coordinator(ctx: RequestContext) -> TransactionCoordinator:
    txn = ctx.broker.transactions
    if txn is None:
        raise RuntimeError("this broker was assembled without a transaction coordinator")
    return txn


def fenced_as(error: int, api_version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED came with KIP-588; older versions of each API answer INVALID_PRODUCER_EPOCH."""
    if error == ProducerFencedError.errno and api_version < fenced_since:
        return int(InvalidProducerEpochError.errno)
    return error
