"""The shared step of AlterConfigs and IncrementalAlterConfigs: compute, validate, apply."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError

from ebb_broker.log.errors import LogError
from ebb_broker.protocol.authz import (
    CLUSTER,
    CLUSTER_AUTHORIZATION_FAILED,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    allowed,
)
from ebb_broker.protocol.configs import RESOURCE_BROKER, RESOURCE_TOPIC, render, topic_overrides
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.security.acl import AclOperation

log = logging.getLogger(__name__)

# (current overrides, effective configs as strings) -> the new overrides
Change = Callable[[dict[str, str], dict[str, str]], dict[str, str]]


def config_refusal(
    ctx: RequestContext, op: AclOperation, resource_type: int, name: str
) -> tuple[int, str] | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on the TOPIC (29) or, for a broker resource, the CLUSTER (31)."""
    if resource_type == RESOURCE_TOPIC and not allowed(ctx, op, TOPIC, name):
        return TOPIC_AUTHORIZATION_FAILED, f"{op.name} on the topic is not allowed"
    if resource_type == RESOURCE_BROKER and not allowed(ctx, op, CLUSTER):
        return CLUSTER_AUTHORIZATION_FAILED, f"{op.name} on the cluster is not allowed"
    return None


def apply_topic_overrides(
    broker: Broker, resource_type: int, name: str, change: Change, validate_only: bool
) -> tuple[int, str | None]:
    """Apply `change(old_overrides, effective)` to a topic; (error code, message)."""
    if resource_type == RESOURCE_BROKER:
        return InvalidRequestError.errno, "dynamic broker configs are not supported; use --config at start"
    if resource_type != RESOURCE_TOPIC:
        return InvalidRequestError.errno, f"resource type {resource_type} is not supported"
    if name not in broker.logs.topics():
        return UnknownTopicOrPartitionError.errno, f"topic {name!r} does not exist"
    old = topic_overrides(broker, name)
    try:
        effective = {k: render(v) or "" for k, v in broker.logs.topic_config(name).to_props().items()}
        new = change(old, effective)
        broker.config.topic_config(new)  # validates the whole result; raises InvalidConfigError
        if not validate_only:
            delta: dict[str, str | None] = {k: None for k in old if k not in new}
            delta.update({k: v for k, v in new.items() if old.get(k) != v})
            if delta:
                broker.logs.alter_topic_config(name, delta)
                log.info("topic %s configs changed: %s", name, delta)
    except LogError as exc:
        return error_code(exc), str(exc)
    return 0, None
