"""The broker's configuration with Kafka's names and defaults, validated by pydantic.

Values arrive as strings (``--config KEY=VALUE``) and are parsed here once; every unknown key or bad value
raises ``InvalidConfigError`` naming the key. Topic-level settings are the log engine's ``LogConfig``
(``ebb_broker.log.log_config``); the broker's ``log.*`` keys are their defaults (Kafka's synonyms). Ebb
adds KIP-68's ``log.retention.commitoffset.{enable,ms,minutes,hours,groups}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from ebb_broker.coordinator.group_config import INT_MAX, GroupCoordinatorConfig
from ebb_broker.coordinator.transaction_coordinator import TransactionCoordinatorConfig
from ebb_broker.log.errors import InvalidConfigError
from ebb_broker.log.log_config import (
    HOUR_MS,
    LONG_MAX,
    MINUTE_MS,
    KafkaInt,
    KafkaLong,
    KafkaStyleConfig,
    LogConfig,
    LogManagerConfig,
    invalid_config,
)
from ebb_broker.security.authorizer import AUTHORIZER_CLASSES
from ebb_broker.security.listeners import (
    DEFAULT_PROTOCOL_MAP,
    Endpoint,
    ListenerConfigError,
    advertised,
    parse_listeners,
    parse_protocol_map,
)
from ebb_broker.security.sasl import SUPPORTED as SASL_MECHANISMS

# Broker key -> topic key for the broker-wide defaults of topic configs (Kafka's LogConfig synonyms).
_TOPIC_SYNONYMS = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.message.timestamp.type": "message.timestamp.type",
    "message.max.bytes": "max.message.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "tombstone.null.value.enable": "tombstone.null.value.enable",
    "log.retention.commitoffset.groups": "retention.commitoffset.groups",
}


LISTENER_PREFIX = "listener.name."
# The keys a listener may override (listener.name.<listener>.<key>).
LISTENER_KEYS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
    }
)
# Values DescribeConfigs never shows (Kafka's PASSWORD type: is_sensitive, value null).
SENSITIVE_KEYS = frozenset(
    {"ssl.keystore.password", "ssl.key.password", "ssl.keystore.key", "ssl.truststore.password"}
)


def sasl_mechanisms(text: str | None) -> tuple[str, ...]:
    return tuple(m.strip().upper() for m in (text or "").split(",") if m.strip())


def parse_ip_overrides(text: str) -> dict[str, int]:
    """Kafka's max.connections.per.ip.overrides: ``host-or-ip:count,...`` (hosts are matched as given)."""
    out: dict[str, int] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"expected host:count, got {item!r}")
        out[host.strip()] = int(count)
    return out


class BrokerConfig(KafkaStyleConfig):
    """Broker-wide settings (Kafka's names and defaults); also the defaults of every topic config."""

    log_retention_hours: KafkaInt = Field(168, alias="log.retention.hours", ge=-1)
    log_retention_minutes: KafkaInt | None = Field(None, alias="log.retention.minutes", ge=-1)
    log_retention_ms: KafkaLong | None = Field(None, alias="log.retention.ms", ge=-1)
    log_retention_bytes: KafkaLong = Field(-1, alias="log.retention.bytes", ge=-1)
    log_segment_bytes: KafkaInt = Field(1024**3, alias="log.segment.bytes", ge=14)
    log_roll_hours: KafkaInt = Field(168, alias="log.roll.hours", ge=1)
    log_roll_ms: KafkaLong | None = Field(None, alias="log.roll.ms", ge=1)
    log_index_size_max_bytes: KafkaInt = Field(10 * 1024 * 1024, alias="log.index.size.max.bytes", ge=12)
    log_index_interval_bytes: KafkaInt = Field(4096, alias="log.index.interval.bytes", ge=0)
    log_cleanup_policy: str = Field("delete", alias="log.cleanup.policy")
    log_retention_check_interval_ms: KafkaLong = Field(300_000, alias="log.retention.check.interval.ms", ge=1)
    log_cleaner_enable: bool = Field(True, alias="log.cleaner.enable")
    log_cleaner_backoff_ms: KafkaLong = Field(15_000, alias="log.cleaner.backoff.ms", ge=0)
    log_cleaner_dedupe_buffer_size: KafkaLong = Field(
        128 * 1024 * 1024, alias="log.cleaner.dedupe.buffer.size", ge=24
    )
    log_cleaner_min_compaction_lag_ms: KafkaLong = Field(0, alias="log.cleaner.min.compaction.lag.ms", ge=0)
    log_cleaner_max_compaction_lag_ms: KafkaLong = Field(
        LONG_MAX, alias="log.cleaner.max.compaction.lag.ms", ge=1
    )
    log_cleaner_delete_retention_ms: KafkaLong = Field(
        24 * HOUR_MS, alias="log.cleaner.delete.retention.ms", ge=0
    )
    log_cleaner_min_cleanable_ratio: float = Field(0.5, alias="log.cleaner.min.cleanable.ratio", ge=0, le=1)
    log_segment_delete_delay_ms: KafkaLong = Field(60_000, alias="log.segment.delete.delay.ms", ge=0)
    log_flush_interval_messages: KafkaLong = Field(LONG_MAX, alias="log.flush.interval.messages", ge=1)
    log_flush_interval_ms: KafkaLong = Field(LONG_MAX, alias="log.flush.interval.ms", ge=0)
    # How often logs are checked for flush.ms. Kafka's default (Long.MAX) never checks, so flush.ms alone
    # does nothing there; Ebb checks every second, which makes flush.ms work by itself (docs/broker.md).
    log_flush_scheduler_interval_ms: KafkaLong = Field(1000, alias="log.flush.scheduler.interval.ms", ge=1)
    log_message_timestamp_before_max_ms: KafkaLong = Field(
        LONG_MAX, alias="log.message.timestamp.before.max.ms", ge=0
    )
    log_message_timestamp_after_max_ms: KafkaLong = Field(
        HOUR_MS, alias="log.message.timestamp.after.max.ms", ge=0
    )
    compression_type: Literal["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] = Field(
        "producer", alias="compression.type"
    )
    compression_gzip_level: KafkaInt = Field(-1, alias="compression.gzip.level")
    compression_lz4_level: KafkaInt = Field(9, alias="compression.lz4.level")
    compression_zstd_level: KafkaInt = Field(3, alias="compression.zstd.level")
    log_flush_offset_checkpoint_interval_ms: KafkaInt = Field(
        60_000, alias="log.flush.offset.checkpoint.interval.ms", ge=0
    )
    log_flush_start_offset_checkpoint_interval_ms: KafkaInt = Field(
        60_000, alias="log.flush.start.offset.checkpoint.interval.ms", ge=0
    )
    log_message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = Field(
        "CreateTime", alias="log.message.timestamp.type"
    )
    message_max_bytes: KafkaInt = Field(1_048_588, alias="message.max.bytes", ge=0)
    num_partitions: KafkaInt = Field(1, alias="num.partitions", ge=1)
    auto_create_topics_enable: bool = Field(True, alias="auto.create.topics.enable")
    offsets_topic_num_partitions: KafkaInt = Field(50, alias="offsets.topic.num.partitions", ge=1)
    # The classic group coordinator (Kafka's group.* and offsets.* names and defaults).
    group_initial_rebalance_delay_ms: KafkaInt = Field(3000, alias="group.initial.rebalance.delay.ms", ge=0)
    group_min_session_timeout_ms: KafkaInt = Field(6000, alias="group.min.session.timeout.ms", ge=0)
    group_max_session_timeout_ms: KafkaInt = Field(1_800_000, alias="group.max.session.timeout.ms", ge=0)
    group_max_size: KafkaInt = Field(INT_MAX, alias="group.max.size", ge=1, le=INT_MAX)
    offsets_retention_minutes: KafkaInt = Field(7 * 24 * 60, alias="offsets.retention.minutes", ge=1)
    offsets_retention_check_interval_ms: KafkaLong = Field(
        600_000, alias="offsets.retention.check.interval.ms", ge=1
    )
    offset_metadata_max_bytes: KafkaInt = Field(4096, alias="offset.metadata.max.bytes", ge=0)
    # The transaction coordinator and producer state (Kafka's names and defaults).
    transaction_state_log_num_partitions: KafkaInt = Field(
        50, alias="transaction.state.log.num.partitions", ge=1
    )
    transaction_max_timeout_ms: KafkaInt = Field(900_000, alias="transaction.max.timeout.ms", ge=1)
    transactional_id_expiration_ms: KafkaInt = Field(
        7 * 24 * 3_600_000, alias="transactional.id.expiration.ms", ge=1
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: KafkaInt = Field(
        10_000, alias="transaction.abort.timed.out.transaction.cleanup.interval.ms", ge=1
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: KafkaInt = Field(
        3_600_000, alias="transaction.remove.expired.transaction.cleanup.interval.ms", ge=1
    )
    producer_id_expiration_ms: KafkaInt = Field(86_400_000, alias="producer.id.expiration.ms", ge=1)
    producer_id_expiration_check_interval_ms: KafkaInt = Field(
        600_000, alias="producer.id.expiration.check.interval.ms", ge=1
    )
    # KIP-68, broker side: consumed retention is off unless enabled; the time may be given in ms,
    # minutes or hours (ms wins, then minutes, as for log.retention.*).
    log_retention_commitoffset_enable: bool = Field(False, alias="log.retention.commitoffset.enable")
    log_retention_commitoffset_hours: KafkaInt | None = Field(
        None, alias="log.retention.commitoffset.hours", ge=-1
    )
    log_retention_commitoffset_minutes: KafkaInt | None = Field(
        None, alias="log.retention.commitoffset.minutes", ge=-1
    )
    log_retention_commitoffset_ms: KafkaLong | None = Field(
        None, alias="log.retention.commitoffset.ms", ge=-1
    )
    log_retention_commitoffset_groups: str = Field("", alias="log.retention.commitoffset.groups")
    tombstone_null_value_enable: bool = Field(True, alias="tombstone.null.value.enable")
    # Limits no single client can break (Kafka's SocketServer names and defaults; docs/broker.md).
    socket_request_max_bytes: KafkaInt = Field(104_857_600, alias="socket.request.max.bytes", ge=1)
    sasl_server_max_receive_size: KafkaInt = Field(524_288, alias="sasl.server.max.receive.size", ge=1)
    queued_max_request_bytes: KafkaLong = Field(-1, alias="queued.max.request.bytes", ge=-1)
    connections_max_idle_ms: KafkaLong = Field(600_000, alias="connections.max.idle.ms", ge=-1)
    max_connections: KafkaInt = Field(2**31 - 1, alias="max.connections", ge=0)
    max_connections_per_ip: KafkaInt = Field(2**31 - 1, alias="max.connections.per.ip", ge=0)
    max_connections_per_ip_overrides: str = Field("", alias="max.connections.per.ip.overrides")
    # The most a Fetch response carries, whatever the request's max_bytes says (Kafka's, 55 MiB).
    fetch_max_bytes: KafkaInt = Field(57_671_680, alias="fetch.max.bytes", ge=1024)
    # Client quotas (KIP-13): the rates they bound are averaged over quota.window.num samples of
    # quota.window.size.seconds each (Kafka's names and defaults).
    quota_window_num: KafkaInt = Field(11, alias="quota.window.num", ge=1)
    quota_window_size_seconds: KafkaInt = Field(1, alias="quota.window.size.seconds", ge=1)
    # Ebb: the most partitions this broker holds (every topic, __consumer_offsets included); creation past
    # it, or past what the descriptor limit allows, is refused before anything is written.
    max_partitions: KafkaInt = Field(10_000, alias="max.partitions", ge=1)

    # Listeners (Kafka's names; docs/broker.md "Listeners and TLS"). Without `listeners`, --host/--port
    # make one PLAINTEXT listener.
    listeners: str | None = Field(None, alias="listeners")
    advertised_listeners: str | None = Field(None, alias="advertised.listeners")
    listener_security_protocol_map: str = Field(DEFAULT_PROTOCOL_MAP, alias="listener.security.protocol.map")
    # TLS from PEM (KIP-651); each may be set per listener as listener.name.<listener>.<key>.
    ssl_keystore_type: str = Field("PEM", alias="ssl.keystore.type")
    ssl_keystore_location: str | None = Field(None, alias="ssl.keystore.location")
    ssl_keystore_password: str | None = Field(None, alias="ssl.keystore.password")
    ssl_key_password: str | None = Field(None, alias="ssl.key.password")
    ssl_keystore_key: str | None = Field(None, alias="ssl.keystore.key")
    ssl_keystore_certificate_chain: str | None = Field(None, alias="ssl.keystore.certificate.chain")
    ssl_truststore_type: str = Field("PEM", alias="ssl.truststore.type")
    ssl_truststore_location: str | None = Field(None, alias="ssl.truststore.location")
    ssl_truststore_password: str | None = Field(None, alias="ssl.truststore.password")
    ssl_truststore_certificates: str | None = Field(None, alias="ssl.truststore.certificates")
    ssl_client_auth: Literal["none", "requested", "required"] = Field("none", alias="ssl.client.auth")
    ssl_enabled_protocols: str = Field("TLSv1.2,TLSv1.3", alias="ssl.enabled.protocols")
    ssl_principal_mapping_rules: str = Field("DEFAULT", alias="ssl.principal.mapping.rules")
    # SASL (KIP-152): the mechanisms offered on SASL listeners. Kafka's default, GSSAPI, is not served.
    sasl_enabled_mechanisms: str = Field("SCRAM-SHA-256,SCRAM-SHA-512", alias="sasl.enabled.mechanisms")
    connection_failed_authentication_delay_ms: KafkaInt = Field(
        100, alias="connection.failed.authentication.delay.ms", ge=0
    )
    # Authorization (Kafka's StandardAuthorizer; docs/broker.md "Authorization"): off unless the class is set.
    authorizer_class_name: str = Field("", alias="authorizer.class.name")
    super_users: str = Field("", alias="super.users")
    allow_everyone_if_no_acl_found: bool = Field(False, alias="allow.everyone.if.no.acl.found")
    # `listener.name.<listener>.<key>` settings, by listener name (upper case), then key.
    listener_overrides: dict[str, dict[str, str]] = Field(default_factory=dict, exclude=True)

    @field_validator("max_connections_per_ip_overrides")
    @classmethod
    def _overrides(cls, value: str) -> str:
        parse_ip_overrides(value)
        return value

    @property
    def connections_per_ip_overrides(self) -> dict[str, int]:
        return parse_ip_overrides(self.max_connections_per_ip_overrides)

    @model_validator(mode="after")
    def _check(self) -> BrokerConfig:
        LogConfig.parse(self.topic_defaults())  # surfaces bad policy / commitoffset > retention early
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise InvalidConfigError(
                "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms"
            )
        try:
            protocols = parse_protocol_map(self.listener_security_protocol_map)
            if self.listeners is not None:
                endpoints = parse_listeners(self.listeners, protocols)
                advertised(endpoints, self.advertised_listeners, protocols)
                names = {e.name for e in endpoints}
                for name in self.listener_overrides:
                    if name not in names:
                        raise ListenerConfigError(f"listener.name.{name.lower()}.*: {name} is not a listener")
        except ListenerConfigError as exc:
            raise ValueError(str(exc)) from None
        if self.authorizer_class_name and self.authorizer_class_name not in AUTHORIZER_CLASSES:
            raise ValueError(
                f"authorizer.class.name {self.authorizer_class_name!r}: ebb-broker's authorizer has Kafka's "
                "StandardAuthorizer semantics; set " + " or ".join(AUTHORIZER_CLASSES)
            )
        for where in [self.sasl_enabled_mechanisms] + [
            o["sasl.enabled.mechanisms"]
            for o in self.listener_overrides.values()
            if "sasl.enabled.mechanisms" in o
        ]:
            mechanisms = sasl_mechanisms(where)
            if not mechanisms or any(m not in SASL_MECHANISMS for m in mechanisms):
                raise ValueError(
                    f"sasl.enabled.mechanisms {where!r}: ebb-broker serves " + ", ".join(SASL_MECHANISMS)
                )
        return self

    def transaction_coordinator_config(self) -> TransactionCoordinatorConfig:
        """The transaction coordinator's view of these settings."""
        return TransactionCoordinatorConfig(
            state_partitions=self.transaction_state_log_num_partitions,
            max_timeout_ms=self.transaction_max_timeout_ms,
            id_expiration_ms=self.transactional_id_expiration_ms,
            abort_check_interval_ms=self.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            expire_check_interval_ms=self.transaction_remove_expired_transaction_cleanup_interval_ms,
        )

    def group_coordinator_config(self) -> GroupCoordinatorConfig:
        """The group coordinator's view of these settings."""
        return GroupCoordinatorConfig(
            min_session_timeout_ms=self.group_min_session_timeout_ms,
            max_session_timeout_ms=self.group_max_session_timeout_ms,
            max_size=self.group_max_size,
            initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            offsets_retention_ms=self.offsets_retention_minutes * MINUTE_MS,
            offsets_retention_check_interval_ms=self.offsets_retention_check_interval_ms,
            offset_metadata_max_bytes=self.offset_metadata_max_bytes,
        )

    def endpoints(self, host: str, port: int) -> list[Endpoint]:
        """The listeners to bind: ``listeners``, or one PLAINTEXT listener on --host/--port."""
        if self.listeners is None:
            return [Endpoint("PLAINTEXT", "PLAINTEXT", host, port)]
        return parse_listeners(self.listeners, parse_protocol_map(self.listener_security_protocol_map))

    def advertised_endpoints(
        self, endpoints: list[Endpoint], advertised_host: str | None
    ) -> dict[str, tuple[str, int]]:
        """Listener name -> (host, port) given to clients; port 0 = the bound port (caller fills it in)."""
        if self.listeners is None:
            (e,) = endpoints
            return {e.name: (advertised_host or e.host, e.port)}
        return advertised(
            endpoints, self.advertised_listeners, parse_protocol_map(self.listener_security_protocol_map)
        )

    def listener_settings(self, listener: str, security_protocol: str) -> dict[str, str | None]:
        """The effective ``ssl.*`` (and SASL) settings of one listener: ``listener.name.<l>.<key>`` over the
        broker-wide key. As in Kafka, a SASL_SSL listener takes ``ssl.client.auth`` only from its prefix."""
        props = self.to_props()
        out: dict[str, str | None] = {k: props[k] for k in LISTENER_KEYS}
        if security_protocol == "SASL_SSL":
            out["ssl.client.auth"] = "none"
        out.update(self.listener_overrides.get(listener.upper(), {}))
        return out

    @staticmethod
    def _ms(ms: int | None, minutes: int | None, hours: int | None) -> int | None:
        if ms is not None:
            return ms
        if minutes is not None:
            return minutes * MINUTE_MS if minutes >= 0 else -1
        if hours is not None:
            return hours * HOUR_MS if hours >= 0 else -1
        return None

    @property
    def retention_ms(self) -> int:
        ms = self._ms(self.log_retention_ms, self.log_retention_minutes, self.log_retention_hours)
        return -1 if ms is None else ms

    @property
    def retention_commitoffset_ms(self) -> int:
        """Broker default of retention.commitoffset.ms: -1 unless log.retention.commitoffset.enable."""
        if not self.log_retention_commitoffset_enable:
            return -1
        ms = self._ms(
            self.log_retention_commitoffset_ms,
            self.log_retention_commitoffset_minutes,
            self.log_retention_commitoffset_hours,
        )
        return -1 if ms is None else ms

    def topic_defaults(self) -> dict[str, Any]:
        """The topic-level view of the broker settings (what a topic without overrides gets)."""
        props = self.to_props()
        out: dict[str, Any] = {topic: props[broker] for broker, topic in _TOPIC_SYNONYMS.items()}
        out["retention.ms"] = self.retention_ms
        out["segment.ms"] = (
            self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * HOUR_MS
        )
        out["retention.commitoffset.ms"] = self.retention_commitoffset_ms
        return out

    def topic_config(self, overrides: Mapping[str, Any]) -> LogConfig:
        return LogConfig.parse(overrides, self.topic_defaults())

    def log_manager_config(self) -> LogManagerConfig:
        """The engine's view of these settings (the log engine imports nothing of the broker)."""
        return LogManagerConfig(
            self.topic_defaults(), self.log_cleaner_dedupe_buffer_size, max_partitions=self.max_partitions
        )

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> BrokerConfig:
        """Validate broker settings; raises InvalidConfigError naming every bad key."""
        plain: dict[str, Any] = {}
        overrides: dict[str, dict[str, str]] = {}
        for key, value in props.items():
            if not key.startswith(LISTENER_PREFIX):
                plain[key] = value
                continue
            name, _, sub = key[len(LISTENER_PREFIX) :].partition(".")
            if sub not in LISTENER_KEYS or not name:
                raise InvalidConfigError(
                    f"unknown broker config {key!r}: listener.name.<listener>. takes "
                    + ", ".join(sorted(LISTENER_KEYS))
                )
            overrides.setdefault(name.upper(), {})[sub] = str(value)
        if overrides:
            plain["listener_overrides"] = overrides
        try:
            return cls.model_validate(plain)
        except ValidationError as exc:
            raise invalid_config(exc, "broker") from None
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"broker defaults: {exc}") from None
