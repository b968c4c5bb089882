"""Topic and broker configs as DescribeConfigs reports them, shared by the three config APIs.

Sources follow Kafka's ConfigSource: DYNAMIC_TOPIC_CONFIG (1) for a topic override,
DYNAMIC_BROKER_CONFIG (2) / DYNAMIC_DEFAULT_BROKER_CONFIG (3) for a dynamic broker config of this
broker / of the cluster default, STATIC_BROKER_CONFIG (4) for a value the broker was started with
(`--config`), DEFAULT_CONFIG (5) for the built-in default. Every key of the engine's LogConfig is
listed, including Ebb's `retention.commitoffset.ms` and `retention.commitoffset.groups` (KIP-68) and
`tombstone.null.value.enable` (KIP-87).
GROUP resources (KIP-848's group configs) list the classic-group view Kafka 4.3 gives: the
`consumer.*` session and heartbeat defaults, read-only here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ebb_broker.config import SENSITIVE_KEYS, BrokerConfig
from ebb_broker.dynamic_config import DYNAMIC_KEYS, ConfigSource, DynamicBrokerConfig, Level, Synonym
from ebb_broker.log.log_config import LogConfig
from ebb_broker.protocol.context import Broker

# KIP-848 group configs Kafka 4.3 describes for any group, with their broker-level synonyms and
# defaults. Ebb has classic groups only, so they are read-only defaults here.
GROUP_CONFIG_DEFAULTS = {
    "consumer.session.timeout.ms": ("group.consumer.session.timeout.ms", 45_000),
    "consumer.heartbeat.interval.ms": ("group.consumer.heartbeat.interval.ms", 5_000),
}


@dataclass(frozen=True)
class Described:
    """One entry of a DescribeConfigs answer."""

    name: str
    value: Any
    source: ConfigSource
    read_only: bool
    synonyms: list[Synonym]


RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32  # ConfigResource.Type.GROUP (KIP-848)


class ConfigType(enum.IntEnum):
    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7


LIST_KEYS = {
    "cleanup.policy",
    "log.cleanup.policy",
    "retention.commitoffset.groups",
    "log.retention.commitoffset.groups",
}


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
    """(key, value, source) for every topic config, sorted by key: an override, or where the
    inherited value comes from."""
    effective = broker.logs.topic_config(topic).to_props()
    overrides = topic_overrides(broker, topic)
    builtin = LogConfig().to_props()
    broker_defaults = broker.config.topic_defaults()
    dynamic = broker.dynamic_config
    out = []
    for key in sorted(effective):
        if key in overrides:
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
        elif dynamic is not None:
            source = dynamic.topic_source(key)
        elif render(broker_defaults.get(key)) != render(builtin.get(key)):
            source = ConfigSource.STATIC_BROKER_CONFIG
        else:
            source = ConfigSource.DEFAULT_CONFIG
        out.append((key, effective[key], source))
    return out


def is_sensitive(key: str) -> bool:
    """Kafka's PASSWORD-type configs: DescribeConfigs shows them with a null value."""
    return key in SENSITIVE_KEYS


def describe_broker(config: BrokerConfig, dynamic: DynamicBrokerConfig | None) -> list[Described]:
    """Every broker config with its effective value and Kafka's synonym chain; only the dynamic keys
    are writable, and sensitive ones are shown without their value (in the synonyms too)."""
    explicit = {BrokerConfig.model_fields[f].alias or f for f in config.model_fields_set}
    out = []
    for key, value in sorted(config.to_props().items()):
        if dynamic is not None:
            chain = dynamic.synonyms(key) or [Synonym(key, value, ConfigSource.DEFAULT_CONFIG)]
        else:
            static = key in explicit
            chain = [
                Synonym(
                    key, value, ConfigSource.STATIC_BROKER_CONFIG if static else ConfigSource.DEFAULT_CONFIG
                )
            ]
        if is_sensitive(key):
            value, chain = None, [Synonym(s.name, None, s.source) for s in chain]
        out.append(Described(key, value, chain[0].source, key not in DYNAMIC_KEYS, chain))
    return out


def describe_broker_defaults(dynamic: DynamicBrokerConfig | None) -> list[Described]:
    """The cluster-wide dynamic defaults (resource name ""): only what was set, as Kafka lists them."""
    if dynamic is None:
        return []
    defaults = dynamic.dynamic(Level.DEFAULT)
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return [Described(k, v, source, False, [Synonym(k, v, source)]) for k, v in sorted(defaults.items())]


def describe_group() -> list[Described]:
    """KIP-848 group configs of a (classic) group: Kafka's defaults, read-only."""
    return [
        Described(
            key,
            value,
            ConfigSource.DEFAULT_CONFIG,
            True,
            [Synonym(synonym, value, ConfigSource.DEFAULT_CONFIG)],
        )
        for key, (synonym, value) in sorted(GROUP_CONFIG_DEFAULTS.items())
    ]
