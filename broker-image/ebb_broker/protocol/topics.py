"""Topics as requests see them: lookups, the internal topics, and creation (CreateTopics, Metadata).

Names follow Kafka's rules (``ebb_broker.log.topic_names``), checked on the whole string. Creation runs
in a worker thread, one batch per request (``LogManager.create_topics``: the partition budget checked
for the whole batch before anything is written, ``ebb-topics.json`` written once), so the event loop keeps
serving every other client while thousands of partitions are made.

Internal topics (Kafka's ``Topic.isInternal``): ``__consumer_offsets`` and ``__transaction_state`` are
written by their coordinators only. Clients may not create them (CreateTopics: INVALID_REQUEST; Metadata
never auto-creates them), produce to them or delete their records (INVALID_TOPIC_EXCEPTION, as Kafka's
ReplicaManager answers); their coordinators create them on first use with their own configs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka.errors import InvalidRequestError, InvalidTopicError, UnknownTopicOrPartitionError

from ebb_broker.coordinator.transaction_records import TRANSACTION_STATE_TOPIC
from ebb_broker.log import NewTopic, TopicMetadata
from ebb_broker.log.errors import LogError, TopicExistsError, shown_all
from ebb_broker.log.topic_names import invalid_reason
from ebb_broker.protocol.context import Broker
from ebb_broker.protocol.errors import error_code
from ebb_formats.consumer_offsets import OFFSETS_TOPIC

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})

# One node holds every partition (a directory, a segment and two preallocated indexes each); a
# request for more is refused with INVALID_PARTITIONS instead of stalling the broker creating them.
MAX_PARTITIONS_PER_TOPIC = 10_000


def has_partition(topics: Mapping[str, Any], topic: str, partition: int) -> bool:
    """Whether `topic` exists (in a LogManager.topics() snapshot) with this partition."""
    meta = topics.get(topic)
    return meta is not None and 0 <= partition < meta.partitions


def creation_refusal(name: str) -> tuple[int, str] | None:
    """Why a client may not create `name` (an illegal name: INVALID_TOPIC_EXCEPTION; an internal topic:
    INVALID_REQUEST, as Kafka's ControllerApis refuses `__cluster_metadata`), or None."""
    reason = invalid_reason(name)
    if reason is not None:
        return InvalidTopicError.errno, reason
    if name in INTERNAL_TOPICS:
        return InvalidRequestError.errno, f"Creation of internal topic {name} is prohibited."
    return None


# Batches run one at a time anyway (the engine's creation lock): their own thread keeps requests queued
# behind a long batch out of the default executor, which retention, DeleteRecords and checkpoints share.
_CREATION = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ebb-topic-creation")


async def create_topics(
    broker: Broker, batch: list[NewTopic], *, validate_only: bool = False
) -> dict[str, TopicMetadata | LogError]:
    """One request's topics, created (or only checked) together in the topic-creation thread."""
    if not batch:
        return {}
    create = functools.partial(broker.logs.create_topics, batch, validate_only=validate_only)
    return await asyncio.get_running_loop().run_in_executor(_CREATION, create)


def creation_error(result: TopicMetadata | LogError) -> tuple[int, str | None]:
    """The error code and message a creation result answers with; (0, None) when created."""
    if isinstance(result, LogError):
        return error_code(result), str(result)
    return 0, None


async def auto_create(broker: Broker, names: Iterable[str]) -> dict[str, int]:
    """Metadata's auto-creation (auto.create.topics.enable) of names that do not exist, in one batch with
    num.partitions each: per name 0 (it exists now) or the error code. Kafka creates them asynchronously
    and answers LEADER_NOT_AVAILABLE meanwhile; here the requesting client waits for its batch (off the
    event loop), so its first answer already lists them."""
    out: dict[str, int] = {}
    wanted = []
    for name in names:
        refusal = creation_refusal(name)
        if refusal is None:
            wanted.append(name)
        else:  # internal topics are created by their coordinators, never by a Metadata request
            out[name] = UnknownTopicOrPartitionError.errno if name in INTERNAL_TOPICS else refusal[0]
    partitions = broker.config.num_partitions
    results = await create_topics(broker, [NewTopic(n, partitions) for n in wanted])
    for name, result in results.items():
        # A topic another request created meanwhile exists now: answered as one just created.
        out[name] = 0 if isinstance(result, TopicExistsError) else creation_error(result)[0]
    created = [n for n, r in results.items() if isinstance(r, TopicMetadata)]
    if created:
        log.info(
            "auto-created %d topics with %d partitions each: %s", len(created), partitions, shown_all(created)
        )
    return out
