"""Dynamic broker configs (Kafka's DynamicBrokerConfig on one node).

AlterConfigs and IncrementalAlterConfigs on BROKER resources change, without a restart, the configs
Kafka treats as dynamic, at two levels: the cluster-wide default (resource name "", what
`kafka-configs --entity-type brokers --entity-default` alters) and this broker (its id,
`--entity-name <id>`). The effective value of a key is, highest first: this broker's dynamic value, the
dynamic default, the static value (`--config`), Kafka's default, as Kafka's synonym chain.

Dynamic here are the broker-level defaults of topic configs (Kafka's DynamicLogConfig: the first
synonym of each topic config, e.g. `log.retention.ms` but not `log.retention.hours`), including Ebb's
KIP-68 and KIP-87 defaults. They take effect at once for every topic without its own override. Other
keys are refused as Kafka refuses them ("Cannot update these configs dynamically"); unlike Kafka, an
unknown key is refused too rather than stored for a plugin.

The dynamic values live in `<data_dir>/dynamic-broker-configs.json`, written atomically (tmp, fsync,
rename, directory fsync) before a change is acknowledged, and are read back on start.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ebb_broker.config import _TOPIC_SYNONYMS, BrokerConfig
from ebb_broker.log.checkpoint import atomic_write
from ebb_broker.log.errors import InvalidConfigError

log = logging.getLogger(__name__)

FILE_NAME = "dynamic-broker-configs.json"
_VERSION = 1

# The broker keys that are the first synonym of a topic config (Kafka's DynamicLogConfig
# ReconfigurableConfigs, for the topic configs Ebb has), plus Ebb's switch of KIP-68's default.
DYNAMIC_KEYS = frozenset(
    {
        "log.cleanup.policy",
        "log.retention.ms",
        "log.retention.bytes",
        "log.segment.bytes",
        "log.roll.ms",
        "log.index.size.max.bytes",
        "log.index.interval.bytes",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.segment.delete.delay.ms",
        "log.message.timestamp.type",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "message.max.bytes",
        "log.retention.commitoffset.enable",
        "log.retention.commitoffset.ms",
        "log.retention.commitoffset.groups",
        "tombstone.null.value.enable",
    }
)


class Level(enum.Enum):
    """Where a dynamic value is set: Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG / DYNAMIC_BROKER_CONFIG."""

    DEFAULT = "default"
    BROKER = "broker"


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigs ConfigSource."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class DynamicConfigError(Exception):
    """A change Kafka refuses with INVALID_REQUEST (not dynamic, unknown, or a bad value)."""


@dataclass(frozen=True)
class Synonym:
    name: str
    value: Any
    source: ConfigSource


class DynamicBrokerConfig:
    """The static config, the two dynamic levels and the effective BrokerConfig they make."""

    def __init__(self, data_dir: Path, static: Mapping[str, str]):
        self.path = Path(data_dir) / FILE_NAME
        self.static = dict(static)
        self.levels: dict[Level, dict[str, str]] = {Level.DEFAULT: {}, Level.BROKER: {}}
        if self.path.exists():
            self.levels = self._read()
        self.current = self._effective(self.levels)

    def _read(self) -> dict[Level, dict[str, str]]:
        try:
            doc = json.loads(self.path.read_text())
            if doc.get("version") != _VERSION:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            levels = {level: {str(k): str(v) for k, v in doc[level.value].items()} for level in Level}
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            raise InvalidConfigError(f"{self.path}: not a dynamic broker config file: {exc}") from None
        for level, props in levels.items():
            not_dynamic = sorted(set(props) - DYNAMIC_KEYS)
            if not_dynamic:
                raise InvalidConfigError(f"{self.path}: non-dynamic keys ({level.value}): {not_dynamic}")
        return levels

    def _effective(self, levels: Mapping[Level, Mapping[str, str]]) -> BrokerConfig:
        """Static, then the dynamic default, then this broker's values (later wins)."""
        return BrokerConfig.parse({**self.static, **levels[Level.DEFAULT], **levels[Level.BROKER]})

    def dynamic(self, level: Level) -> dict[str, str]:
        return dict(self.levels[level])

    def validate(self, level: Level, props: Mapping[str, str]) -> BrokerConfig:
        """The effective config if `level`'s dynamic values became `props`; raises DynamicConfigError."""
        not_dynamic = sorted(k for k in props if k not in DYNAMIC_KEYS)
        if not_dynamic:
            raise DynamicConfigError(f"Cannot update these configs dynamically: [{', '.join(not_dynamic)}]")
        levels = {**self.levels, level: dict(props)}
        try:
            return self._effective(levels)
        except InvalidConfigError as exc:
            raise DynamicConfigError(str(exc)) from None

    def alter(self, level: Level, props: Mapping[str, str]) -> BrokerConfig:
        """Validate, persist, then make `props` the dynamic values of `level`; the new effective config."""
        effective = self.validate(level, props)
        levels = {**self.levels, level: dict(props)}
        doc = {"version": _VERSION, **{lv.value: dict(sorted(p.items())) for lv, p in levels.items()}}
        atomic_write(self.path, (json.dumps(doc, indent=2) + "\n").encode())
        changed = sorted(set(props.items()) ^ set(self.levels[level].items()))
        self.levels, self.current = levels, effective
        log.info("dynamic broker configs (%s) changed: %s", level.value, sorted({k for k, _ in changed}))
        return effective

    def synonyms(self, key: str) -> list[Synonym]:
        """Where `key` is set, highest precedence first, ending with Kafka's default."""
        out = []
        for level, source in (
            (Level.BROKER, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (Level.DEFAULT, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ):
            if key in self.levels[level]:
                out.append(Synonym(key, self.levels[level][key], source))
        if key in self.static:
            out.append(Synonym(key, self.static[key], ConfigSource.STATIC_BROKER_CONFIG))
        if _DEFAULTS.get(key) is not None:
            out.append(Synonym(key, _DEFAULTS[key], ConfigSource.DEFAULT_CONFIG))
        return out

    def source(self, key: str) -> ConfigSource:
        chain = self.synonyms(key)
        return chain[0].source if chain else ConfigSource.DEFAULT_CONFIG

    def topic_source(self, topic_key: str) -> ConfigSource:
        """Where a topic's inherited value comes from: the highest level that sets one of the broker
        keys it is a synonym of (DEFAULT_CONFIG when none is set)."""
        sources = [
            self.source(broker_key)
            for broker_key in TOPIC_KEY_SYNONYMS.get(topic_key, ())
            if self.source(broker_key) is not ConfigSource.DEFAULT_CONFIG
        ]
        return min(sources, default=ConfigSource.DEFAULT_CONFIG)


# topic key -> the broker keys it inherits from (Kafka's ServerTopicConfigSynonyms).
TOPIC_KEY_SYNONYMS: dict[str, tuple[str, ...]] = {
    **{topic: (broker,) for broker, topic in _TOPIC_SYNONYMS.items()},
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "retention.commitoffset.ms": (
        "log.retention.commitoffset.ms",
        "log.retention.commitoffset.minutes",
        "log.retention.commitoffset.hours",
        "log.retention.commitoffset.enable",
    ),
}


_DEFAULTS: dict[str, Any] = BrokerConfig.parse({}).to_props()
