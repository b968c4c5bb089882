"""The shared step of AlterConfigs and IncrementalAlterConfigs: compute, validate, apply.

Topic resources change the topic's overrides (INVALID_CONFIG for a bad one); BROKER resources change
the dynamic broker configs (`ebb_broker.dynamic_config`), refused with INVALID_REQUEST as Kafka does
for a key that is not dynamic or a bad value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka.errors import InvalidRequestError, UnknownTopicOrPartitionError

from ebb_broker.dynamic_config import DynamicConfigError, Level
from ebb_broker.log.errors import InvalidConfigError, LogError, shown
from ebb_broker.protocol.authz import (
    CLUSTER,
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC,
    TOPIC_AUTHORIZATION_FAILED,
    allowed,
)
from ebb_broker.protocol.configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    render,
    topic_overrides,
)
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.errors import error_code
from ebb_broker.security.acl import AclOperation

log = logging.getLogger(__name__)

# (current overrides, effective configs as strings) -> the new overrides
Change = Callable[[dict[str, str], dict[str, str]], dict[str, str]]


def config_refusal(
    ctx: RequestContext, op: AclOperation, resource_type: int, name: str
) -> tuple[int, str] | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on the TOPIC (29), the GROUP (30) or, for a broker resource, the
    CLUSTER (31), as Kafka's configsAuthorizationApiError."""
    if resource_type == RESOURCE_TOPIC and not allowed(ctx, op, TOPIC, name):
        return TOPIC_AUTHORIZATION_FAILED, f"{op.name} on the topic is not allowed"
    if resource_type == RESOURCE_GROUP and not allowed(ctx, op, GROUP, name):
        return GROUP_AUTHORIZATION_FAILED, f"{op.name} on the group is not allowed"
    if resource_type == RESOURCE_BROKER and not allowed(ctx, op, CLUSTER):
        return CLUSTER_AUTHORIZATION_FAILED, f"{op.name} on the cluster is not allowed"
    return None


def apply_broker_configs(
    broker: Broker, name: str, change: Change, validate_only: bool
) -> tuple[int, str | None]:
    """Apply `change(old_dynamic_values, effective)` to the cluster default ("") or this broker's dynamic
    configs; the new values take effect at once (topic defaults included). (error code, message)."""
    dynamic = broker.dynamic_config
    if name == "":
        level = Level.DEFAULT
    elif name == str(broker.identity.node_id):
        level = Level.BROKER
    else:
        return (
            InvalidRequestError.errno,
            f"broker {shown(name)} is not this broker ({broker.identity.node_id})",
        )
    if dynamic is None:
        return InvalidRequestError.errno, "dynamic broker configs are not enabled on this broker"
    try:
        effective = {k: render(v) or "" for k, v in broker.config.to_props().items()}
        new = change(dynamic.dynamic(level), effective)
        if validate_only:
            dynamic.validate(level, new)
        else:
            broker.config = dynamic.alter(level, new)
            broker.logs.update_defaults(broker.config.log_manager_config())
    except (DynamicConfigError, InvalidConfigError) as exc:
        return InvalidRequestError.errno, str(exc)
    return 0, None


def apply_topic_overrides(
    broker: Broker, resource_type: int, name: str, change: Change, validate_only: bool
) -> tuple[int, str | None]:
    """Apply `change(old_overrides, effective)` to a topic, or to a broker's dynamic configs;
    (error code, message)."""
    if resource_type == RESOURCE_BROKER:
        return apply_broker_configs(broker, name, change, validate_only)
    if resource_type == RESOURCE_GROUP:
        return InvalidRequestError.errno, "group configs are read-only on ebb-broker (no KIP-848 groups)"
    if resource_type != RESOURCE_TOPIC:
        return InvalidRequestError.errno, f"resource type {resource_type} is not supported"
    if name not in broker.logs.topics():
        return UnknownTopicOrPartitionError.errno, f"topic {shown(name)} does not exist"
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
