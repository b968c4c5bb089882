"""Client properties from a Secret pass an exact-key allowlist; anything else is refused by name."""

from __future__ import annotations

import ssl

import pytest

from ebb_operator.kafka import (
    ALLOWED_PROPERTIES,
    ClusterConfigError,
    ClusterConnection,
    ForbiddenPropertyError,
)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.oauthbearer.token.endpoint.url",  # the client would POST to any URL
        "sasl.kerberos.kinit.cmd",  # a shell command
        "ssl.truststore.location",  # any file of the operator's pod
        "ssl.ca.location",
        "ssl.engine.location",
        "sasl.login.callback.handler.class",
        "bootstrap.servers",  # the KafkaCluster names the servers, not its Secret
        "security.providers",
    ],
)
def test_dangerous_or_unknown_properties_are_refused_by_name(key: str) -> None:
    with pytest.raises(ForbiddenPropertyError, match=key):
        ClusterConnection.of("kafka:9092", {key: "x"})


def test_the_allowlist_has_no_urls_commands_paths_engines_or_providers() -> None:
    assert not [
        k for k in ALLOWED_PROPERTIES if k.endswith((".url", ".cmd", ".location", ".engine", ".provider"))
    ]


def test_sasl_ssl_maps_to_the_client_with_an_inline_ca(tmp_path: object) -> None:
    conn = ClusterConnection.of(
        "kafka:9093",
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "ebb",
         "sasl.password": "pw", "ssl.endpoint.identification.algorithm": "none"},
    )  # fmt: skip
    config = conn.client_config()
    assert (config["security_protocol"], config["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (config["sasl_plain_username"], config["sasl_plain_password"]) == ("ebb", "pw")
    assert isinstance(config["ssl_context"], ssl.SSLContext) and not config["ssl_context"].check_hostname


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SASL_SSLX"}, "security.protocol"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism"),
        ({"ssl.certificate.pem": "x", "security.protocol": "SSL"}, "mutual TLS needs both"),
    ],
)
def test_unusable_values_are_clear_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        ClusterConnection.of("kafka:9092", props).client_config()


def test_a_connection_without_servers_is_refused() -> None:
    with pytest.raises(ClusterConfigError, match="no bootstrap servers"):
        ClusterConnection.of("", {})
