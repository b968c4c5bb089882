"""Topic names and auto-creation, shared by Metadata, Produce and CreateTopics.

Kafka's rules (`Topic.validate`): 1-249 characters from [a-zA-Z0-9._-], and not "." or "..".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from kafka.errors import InvalidTopicError, UnknownTopicOrPartitionError

from ebb_broker.log.errors import LogError, TopicExistsError
from ebb_broker.protocol.context import Broker
from ebb_broker.protocol.errors import error_code

log = logging.getLogger(__name__)

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

# One node holds every partition (a directory, a segment and two preallocated indexes each); a
# request for more is refused with INVALID_PARTITIONS instead of stalling the broker creating them.
MAX_PARTITIONS_PER_TOPIC = 10_000


def invalid_topic_reason(name: str | None) -> str | None:
    """Why `name` is not a legal topic name, or None when it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if not _LEGAL.match(name):
        return f"topic name {name!r} must be 1-249 characters of [a-zA-Z0-9._-]"
    return None


def has_partition(topics: Mapping[str, Any], topic: str, partition: int) -> bool:
    """Whether `topic` exists (in a LogManager.topics() snapshot) with this partition."""
    meta = topics.get(topic)
    return meta is not None and 0 <= partition < meta.partitions


def ensure_topic(broker: Broker, topic: str, *, allow_auto_create: bool) -> int:
    """0 when the topic exists (auto-creating it if allowed), else the error code for it."""
    if invalid_topic_reason(topic) is not None:
        return InvalidTopicError.errno
    if topic in broker.logs.topics():
        return 0
    if not (allow_auto_create and broker.config.auto_create_topics_enable):
        return UnknownTopicOrPartitionError.errno
    try:
        broker.logs.create_topic(topic, broker.config.num_partitions, {})
        log.info("auto-created topic %s with %d partitions", topic, broker.config.num_partitions)
    except TopicExistsError:
        pass
    except LogError as exc:
        return error_code(exc)
    return 0
