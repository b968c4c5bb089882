"""How to reach a cluster: bootstrap servers plus client properties, admitted by an exact-key allowlist.

Properties use the Java client's (= librdkafka's) names, the ones a user already writes for any Kafka
tool. Only the keys in ALLOWED_PROPERTIES pass: a Secret is tenant-controlled input, and several client
properties make a client do more than connect (`sasl.oauthbearer.token.endpoint.url` makes it POST to any
URL, `sasl.kerberos.kinit.cmd` runs a shell command, `*.location` reads any file of the operator's pod,
`*.engine` / `*.provider` load code). Anything else is refused by name. TLS material therefore comes
inline as PEM text (`ssl.ca.pem`, `ssl.certificate.pem`, `ssl.key.pem`), never as a path. This module
knows no Kubernetes: the caller hands it the Secret's decoded data.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Exact keys a cluster Secret may hold, and what each means (docs/operator.md lists them for users).
ALLOWED_PROPERTIES: dict[str, str] = {
    "security.protocol": "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
    "sasl.mechanism": "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
    "sasl.username": "the SASL user",
    "sasl.password": "the SASL password",
    "ssl.ca.pem": "PEM of the CA(s) that signed the brokers' certificates",
    "ssl.certificate.pem": "PEM of the client certificate (mutual TLS)",
    "ssl.key.pem": "PEM of the client private key (mutual TLS)",
    "ssl.key.password": "password of ssl.key.pem, if it is encrypted",
    "ssl.endpoint.identification.algorithm": "https (default: check the broker's host name) or none",
    "client.id": "the client id the brokers log and quota",
}
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class ClusterConfigError(ValueError):
    """The connection settings are unusable (no bootstrap servers, a refused or invalid property)."""


class ForbiddenPropertyError(ClusterConfigError):
    """A client property outside the allowlist; the message names it."""


def check_properties(properties: dict[str, str]) -> None:
    """Raise for the first property outside the allowlist or with a value the client cannot use."""
    for key in sorted(properties):
        if key not in ALLOWED_PROPERTIES:
            raise ForbiddenPropertyError(
                f"client property {key!r} is not allowed in a cluster Secret; allowed: "
                f"{', '.join(sorted(ALLOWED_PROPERTIES))}"
            )
    protocol = properties.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ClusterConfigError(
            f"security.protocol {protocol!r}: use one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    mechanism = properties.get("sasl.mechanism", "PLAIN").upper()
    if mechanism not in SASL_MECHANISMS:
        raise ClusterConfigError(f"sasl.mechanism {mechanism!r}: use one of {', '.join(SASL_MECHANISMS)}")


@dataclass(frozen=True)
class ClusterConnection:
    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, bootstrap_servers: str | None, properties: dict[str, str] | None = None) -> ClusterConnection:
        """A checked connection: bootstrap servers present, every property allowed."""
        if not bootstrap_servers:
            raise ClusterConfigError("no bootstrap servers")
        props = {k: str(v) for k, v in (properties or {}).items()}
        check_properties(props)
        return cls(bootstrap_servers, props)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Identity for connection pooling (same servers and properties = same client)."""
        return self.bootstrap_servers, tuple(sorted(self.properties.items()))

    def to_json(self) -> dict[str, Any]:
        """What a run's request file carries (docs/analysis.md); secret values included."""
        return {"bootstrapServers": self.bootstrap_servers, "properties": dict(self.properties)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterConnection:
        return cls.of(data.get("bootstrapServers"), data.get("properties") or {})

    def client_config(self) -> dict[str, Any]:
        """kafka-python keyword arguments (the client of `ebb_operator.kafka` and the offsets reader)."""
        props = self.properties
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        config: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers, "security_protocol": protocol}
        if "client.id" in props:
            config["client_id"] = props["client.id"]
        if protocol.startswith("SASL_"):
            config["sasl_mechanism"] = props.get("sasl.mechanism", "PLAIN").upper()
            config["sasl_plain_username"] = props.get("sasl.username")
            config["sasl_plain_password"] = props.get("sasl.password")
        if protocol in ("SSL", "SASL_SSL"):
            config["ssl_context"] = self.ssl_context()
        return config

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context from the inline PEMs: the system CAs unless ssl.ca.pem names others."""
        props = self.properties
        ctx = ssl.create_default_context(cadata=props.get("ssl.ca.pem") or None)
        if props.get("ssl.endpoint.identification.algorithm", "https").lower() in ("", "none"):
            ctx.check_hostname = False
        cert, key = props.get("ssl.certificate.pem"), props.get("ssl.key.pem")
        if cert or key:
            if not (cert and key):
                raise ClusterConfigError("mutual TLS needs both ssl.certificate.pem and ssl.key.pem")
            _load_cert_chain(ctx, cert, key, props.get("ssl.key.password"))
        return ctx


def _load_cert_chain(ctx: ssl.SSLContext, cert: str, key: str, password: str | None) -> None:
    """ssl only loads a certificate chain from files: write them privately, load, remove at once."""
    with tempfile.TemporaryDirectory(prefix="ebb-tls-") as tmp:
        paths = []
        for name, pem in (("cert.pem", cert), ("key.pem", key)):
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(pem)
            paths.append(path)
        try:
            ctx.load_cert_chain(paths[0], paths[1], password=password)
        except (ssl.SSLError, ValueError) as exc:
            raise ClusterConfigError(f"cannot load the client certificate and key: {exc}") from None
