"""How to reach a cluster: bootstrap servers plus client properties (security.protocol, sasl.*, ssl.*).

Properties use librdkafka's (= Java client's) names, the same a user puts into a Secret for any Kafka
tool. This module knows no Kubernetes: the caller hands it the Secret's decoded data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_BOOTSTRAP_ENV = "EBB_DEFAULT_BOOTSTRAP_SERVERS"

# librdkafka property -> kafka-python argument, for the one call confluent-kafka lacks (DescribeLogDirs).
_KAFKA_PYTHON_NAMES = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
}
# Only properties a Secret may carry: connection and security, never behaviour the operator relies on.
_ALLOWED_PREFIXES = ("security.protocol", "sasl.", "ssl.", "client.id", "client.dns.lookup")


class ClusterConfigError(ValueError):
    """The connection settings are unusable (no bootstrap servers, forbidden property)."""


@dataclass(frozen=True)
class ClusterConnection:
    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls, bootstrap_servers: str | None, properties: dict[str, str] | None = None
    ) -> ClusterConnection:
        """From spec.cluster, else the operator's default cluster (env EBB_DEFAULT_BOOTSTRAP_SERVERS)."""
        servers = bootstrap_servers or os.environ.get(DEFAULT_BOOTSTRAP_ENV, "")
        if not servers:
            raise ClusterConfigError(
                "no spec.cluster.bootstrapServers and the operator has no default cluster "
                f"({DEFAULT_BOOTSTRAP_ENV})"
            )
        props = dict(properties or {})
        for key in props:
            if not key.startswith(_ALLOWED_PREFIXES):
                raise ClusterConfigError(
                    f"client property {key!r} is not allowed in a cluster Secret "
                    "(only security.protocol, sasl.*, ssl.*, client.id, client.dns.lookup)"
                )
        return cls(servers, props)

    def librdkafka_config(self) -> dict[str, str | int | float | bool]:
        """Typed as librdkafka's Python binding takes it (values of any scalar type)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.properties}

    def kafka_python_config(self) -> dict[str, str]:
        config = {"bootstrap_servers": self.bootstrap_servers}
        for key, value in self.properties.items():
            if key in _KAFKA_PYTHON_NAMES:
                config[_KAFKA_PYTHON_NAMES[key]] = value
        return config
