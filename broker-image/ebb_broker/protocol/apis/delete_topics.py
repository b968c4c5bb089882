"""DeleteTopics: v1-6 (API key 20)

Behaviour:
- Deletes the topic's partitions and data at once (Kafka renames to -delete and removes async).
- Removes every group's committed offsets of the topic (tombstones in `__consumer_offsets`) and drops
  pending transactional ones, as Kafka's group coordinator does on partition deletion: a topic
  re-created with that name shows no committed offset to OffsetFetch.
- Needs DELETE on the CLUSTER, or DESCRIBE and DELETE on the TOPIC: a topic the session may not
  describe answers TOPIC_AUTHORIZATION_FAILED whether it exists or not; one it may describe but not
  delete, TOPIC_AUTHORIZATION_FAILED; nothing of it is deleted.
- `__consumer_offsets` and `__transaction_state` are refused with INVALID_REQUEST: deleting them
  would lose every group's offsets or every transaction's state. Unknown topics get
  UNKNOWN_TOPIC_OR_PARTITION; deletion by topic id (v6) answers UNKNOWN_TOPIC_ID, since topic ids
  are not implemented.
- A name the request repeats gets one INVALID_REQUEST answer ("Duplicate topic name.", Kafka's
  ControllerApis) and is not deleted.

Version notes:
- v1: throttle time. v4: flexible. v5: error message. v6: topics by name or id.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka.errors import InvalidRequestError, UnknownTopicIdError, UnknownTopicOrPartitionError
from kafka.protocol.admin.topics import DeleteTopicsRequest

from ebb_broker.coordinator.transaction_records import TRANSACTION_STATE_TOPIC
from ebb_broker.log.errors import LogError, shown
from ebb_broker.protocol.authz import CLUSTER, TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.duplicates import DUPLICATE_TOPIC, split_repeats
from ebb_broker.protocol.errors import error_code
from ebb_broker.protocol.registry import register
from ebb_formats.consumer_offsets import OFFSETS_TOPIC

API_KEY = 20
log = logging.getLogger(__name__)


def _delete(broker: Broker, name: str | None) -> tuple[int, str | None]:
    if name is None:
        return UnknownTopicIdError.errno, "topic ids are not supported: delete by name"
    if name == OFFSETS_TOPIC:
        return InvalidRequestError.errno, f"{OFFSETS_TOPIC} holds every group's offsets and cannot be deleted"
    if name == TRANSACTION_STATE_TOPIC:
        return InvalidRequestError.errno, f"{name} holds every transaction's state and cannot be deleted"
    if name not in broker.logs.topics():
        return UnknownTopicOrPartitionError.errno, f"topic {shown(name)} does not exist"
    try:
        broker.logs.delete_topic(name)
    except LogError as exc:
        return error_code(exc), str(exc)
    try:
        removed = broker.groups.offsets.on_topic_deleted(name)
    except LogError:  # the topic is gone; its offsets come back only if the broker restarts before a retry
        log.exception("deleted topic %s, but writing the tombstones of its committed offsets failed", name)
        removed = 0
    log.info("deleted topic %s and %d committed offsets of it", name, removed)
    return 0, None


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> Any:
    cls = ctx.response_class
    names, repeated = split_repeats(
        [t.name for t in request.topics] if ctx.api_version >= 6 else list(request.topic_names)
    )
    results = []
    # DELETE on the CLUSTER; else DESCRIBE and DELETE on each TOPIC (Kafka's ControllerApis).
    may_delete_any = allowed(ctx, Op.DELETE, CLUSTER)
    for name in names:
        msg: str | None
        if name is not None and name in repeated:  # Kafka's ControllerApis: one answer, nothing deleted
            err, msg = InvalidRequestError.errno, DUPLICATE_TOPIC
        elif name is not None and not may_delete_any and not allowed(ctx, Op.DESCRIBE, TOPIC, name):
            err, msg = TOPIC_AUTHORIZATION_FAILED, "DESCRIBE on the topic is not allowed"
        elif (
            name is not None
            and not may_delete_any
            and name in ctx.broker.logs.topics()
            and not allowed(ctx, Op.DELETE, TOPIC, name)
        ):
            err, msg = TOPIC_AUTHORIZATION_FAILED, "DELETE on the topic is not allowed"
        else:
            err, msg = _delete(ctx.broker, name)
        results.append(cls.DeletableTopicResult(name=name, error_code=err, error_message=msg))
    return ctx.response(throttle_time_ms=0, responses=results)


register(API_KEY, 1, 6, handle)
