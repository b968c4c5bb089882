"""What the transaction API modules share: the coordinator, and Kafka's error code by version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka.errors import InvalidProducerEpochError, ProducerFencedError

from ebb_broker.log import NewTopic
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.topics import create_topics

if TYPE_CHECKING:
    from ebb_broker.coordinator.transaction_coordinator import TransactionCoordinator


def transaction_coordinator(ctx: RequestContext) -> TransactionCoordinator:
    txn = ctx.broker.transactions
    if txn is None:
        raise RuntimeError("this broker was assembled without a transaction coordinator")
    return txn


async def with_state_topic(ctx: RequestContext) -> TransactionCoordinator:
    """The transaction coordinator, once `__transaction_state` exists. Kafka creates it on the first
    transactional request; here it is made in the topic-creation thread (protocol/topics.py), never on
    the event loop, which would otherwise wait behind another request's batch for the creation lock."""
    txn = transaction_coordinator(ctx)
    store = txn.store
    if not store.exists():
        await create_topics(ctx.broker, [NewTopic(store.topic, store.partitions, store.topic_config)])
    txn.ensure_topic()  # raises what creating it raised (the partition budget), as before
    return txn


def fenced_as(error: int, api_version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED came with KIP-588; older versions of each API answer INVALID_PRODUCER_EPOCH."""
    if error == ProducerFencedError.errno and api_version < fenced_since:
        return int(InvalidProducerEpochError.errno)
    return error
