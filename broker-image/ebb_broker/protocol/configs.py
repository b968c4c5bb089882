"""Topic and broker configs as DescribeConfigs reports them, shared by the three config APIs.

Sources follow Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG (1) for a topic override,
STATIC_BROKER_CONFIG (4) for a default the broker was started with (`--config`), DEFAULT_CONFIG
(5) for the built-in default. Every key of the engine's LogConfig is listed, including Ebb's
`retention.commitoffset.ms` (KIP-68) and `tombstone.null.value.enable` (KIP-87).
"""

from __future__ import annotations

import enum
from typing import Any

from ebb_broker.config import SENSITIVE_KEYS, BrokerConfig
from ebb_broker.log.log_config import LogConfig
from ebb_broker.protocol.context import Broker

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


class ConfigSource(enum.IntEnum):
    DYNAMIC_TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7


LIST_KEYS = {"cleanup.policy"}


def render(value: Any) -> str | None:
    """Kafka's string form of a config value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def config_type(key: str, value: Any) -> ConfigType:
    if key in LIST_KEYS:
        return ConfigType.LIST
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    if isinstance(value, int):
        return ConfigType.LONG if key.endswith((".ms", ".bytes", ".messages")) else ConfigType.INT
    if isinstance(value, float):
        return ConfigType.DOUBLE
    return ConfigType.STRING


def topic_overrides(broker: Broker, topic: str) -> dict[str, str]:
    return {k: str(v) for k, v in broker.logs.topics()[topic].overrides.items()}


def describe_topic(broker: Broker, topic: str) -> list[tuple[str, Any, ConfigSource]]:
    """(key, value, source) for every topic config, sorted by key."""
    effective = broker.logs.topic_config(topic).to_props()
    overrides = topic_overrides(broker, topic)
    builtin = LogConfig().to_props()
    broker_defaults = broker.config.topic_defaults()
    out = []
    for key in sorted(effective):
        if key in overrides:
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
        elif render(broker_defaults.get(key)) != render(builtin.get(key)):
            source = ConfigSource.STATIC_BROKER_CONFIG
        else:
            source = ConfigSource.DEFAULT_CONFIG
        out.append((key, effective[key], source))
    return out


def is_sensitive(key: str) -> bool:
    """Kafka's PASSWORD-type configs: DescribeConfigs shows them with a null value."""
    return key in SENSITIVE_KEYS


def describe_broker(config: BrokerConfig) -> list[tuple[str, Any, ConfigSource]]:
    explicit = {BrokerConfig.model_fields[f].alias or f for f in config.model_fields_set}
    return [
        (
            key,
            None if is_sensitive(key) else value,
            ConfigSource.STATIC_BROKER_CONFIG if key in explicit else ConfigSource.DEFAULT_CONFIG,
        )
        for key, value in sorted(config.to_props().items())
    ]
