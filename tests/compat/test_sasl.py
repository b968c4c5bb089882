"""SASL (issue 11, item 2): SCRAM-SHA-256/512 and PLAIN with the three real clients, wrong passwords refused
with Kafka's error, nothing served before authentication, and the smaller frame limit until then."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from harness.bounded import until
from tests.compat.clients import CLIENTS
from tests.compat.conftest import SecureBroker, scram_authenticate
from tests.compat.wire import Wire

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33


def _wire(sb: SecureBroker, listener: str) -> Wire:
    return sb.wire(listener)


def _authenticate(w: Wire, user: str, password: str) -> Any:
    return scram_authenticate(w, user, password)


@pytest.mark.parametrize("client_name", sorted(CLIENTS))
def test_scram_sha_512_over_sasl_ssl(secure_broker: SecureBroker, client_name: str) -> None:
    c = secure_broker.client(client_name, "SASL_SSL", "admin")
    topic = f"sasl-ssl-{client_name}"
    try:
        c.create_topic(topic)
        c.produce(topic, [(b"k", b"scram over tls")])
        assert [(r.key, r.value) for r in c.consume(topic, 1)] == [(b"k", b"scram over tls")]
    finally:
        c.close()


@pytest.mark.parametrize(
    ("listener", "mechanism"), [("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "PLAIN")]
)
def test_scram_sha_256_and_plain(secure_broker: SecureBroker, listener: str, mechanism: str) -> None:
    c = secure_broker.client("confluent-kafka", listener, "admin", mechanism)
    topic = f"sasl-{mechanism.lower()}"
    c.create_topic(topic)
    c.produce(topic, [(None, mechanism.encode())])
    assert [r.value for r in c.consume(topic, 1)] == [mechanism.encode()]


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_wrong_password_and_unknown_user_fail_alike(secure_broker: SecureBroker, listener: str) -> None:
    messages = []
    for user, password in (("alice", "not-her-password"), ("mallory", "alice-secret")):
        w = _wire(secure_broker, listener)
        try:
            resp = _authenticate(w, user, password)
            assert resp.error_code == SASL_AUTHENTICATION_FAILED
            messages.append(resp.error_message)
            assert w.closed_by_peer()
        finally:
            w.close()
    assert messages[0] == messages[1]  # no hint whether the user exists
    ok = _wire(secure_broker, listener)
    try:
        assert _authenticate(ok, "alice", "alice-secret").error_code == 0
    finally:
        ok.close()


def _plain(w: Wire, user: str, password: str) -> Any:
    """SaslHandshake v1 + PLAIN in SaslAuthenticate v2; the response."""
    w.send_raw(w.frame(SaslHandshakeRequest[1](mechanism="PLAIN"), 1))
    assert SaslHandshakeResponse.decode(w.recv_frame(), version=1, header=True).error_code == 0
    w.send_raw(w.frame(SaslAuthenticateRequest[2](auth_bytes=f"\0{user}\0{password}".encode()), 2))
    return SaslAuthenticateResponse.decode(w.recv_frame(), version=2, header=True)


def test_plain_users_are_the_start_users_not_those_made_later(secure_broker: SecureBroker) -> None:
    """As Kafka's PLAIN users are its static JAAS `user_<name>` entries: carol, made with
    AlterUserScramCredentials (which carries no password), logs in with SCRAM and is refused PLAIN
    with the unknown user's message; a start user (given with a password) logs in with PLAIN."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    sb = secure_broker
    admin = AdminClient({"bootstrap.servers": sb.broker.bootstrap_of("PLAINTEXT")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-secret")]
    ).values():
        future.result(30)
    messages = []
    for user, password in (("carol", "carol-secret"), ("mallory", "carol-secret")):
        w = _wire(sb, "SASL_SSL")
        try:
            refused = _plain(w, user, password)
            assert refused.error_code == SASL_AUTHENTICATION_FAILED
            messages.append(refused.error_message)
        finally:
            w.close()
    assert messages[0] == messages[1] == "Authentication failed: Invalid username or password"
    for authenticate in (
        lambda w: _authenticate(w, "carol", "carol-secret"),
        lambda w: _plain(w, "bob", "bob-secret"),
    ):
        w = _wire(sb, "SASL_SSL")
        try:
            assert authenticate(w).error_code == 0
        finally:
            w.close()


def test_real_clients_report_a_wrong_password(secure_broker: SecureBroker) -> None:
    """librdkafka reports Kafka's SASL_AUTHENTICATION_FAILED message; aiokafka's start() fails."""
    from aiokafka import AIOKafkaProducer
    from confluent_kafka import Producer

    sb = secure_broker
    good = sb.security("SASL_SSL", "alice")
    bad = type(good)(good.protocol, good.mechanism, "alice", "wrong", cafile=good.cafile)
    errors: list[str] = []
    p = Producer(
        {
            "bootstrap.servers": sb.broker.bootstrap_of("SASL_SSL"),
            **bad.confluent(),
            "error_cb": lambda e: errors.append(e.str()),
        }
    )

    def refused() -> list[str]:
        p.poll(0.2)  # librdkafka reports errors through error_cb, inside poll
        return errors

    until("the client's authentication error", refused, 20, interval=0)
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-512" in e for e in errors), errors

    async def aiokafka_start() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=sb.broker.bootstrap_of("SASL_SSL"), **bad.aiokafka())
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(Exception, match=r"(?i)authentication|bootstrap"):
        asyncio.run(asyncio.wait_for(aiokafka_start(), 30))


def test_nothing_is_served_before_authentication(secure_broker: SecureBroker) -> None:
    sb = secure_broker
    # ApiVersions is answered (clients ask it first)...
    w = _wire(sb, "SASL_PLAINTEXT")
    try:
        w.send_raw(w.frame(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3))
        assert ApiVersionsResponse.decode(w.recv_frame(), version=3, header=True).error_code == 0
        # ...Metadata is not: the connection is closed without an answer.
        w.send_raw(w.frame(MetadataRequest[1](topics=None), 1))
        assert w.closed_by_peer()
    finally:
        w.close()
    # A mechanism not enabled: UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
    w = _wire(sb, "SASL_PLAINTEXT")
    try:
        w.send_raw(w.frame(SaslHandshakeRequest[1](mechanism="GSSAPI"), 1))
        hs = SaslHandshakeResponse.decode(w.recv_frame(), version=1, header=True)
        assert hs.error_code == UNSUPPORTED_SASL_MECHANISM
        assert sorted(hs.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert w.closed_by_peer()
    finally:
        w.close()


def test_frames_before_authentication_are_held_to_sasl_server_max_receive_size(
    secure_broker: SecureBroker,
) -> None:
    """524288 bytes (Kafka's default) until SASL completes; the same frame is fine afterwards."""
    sb = secure_broker
    big = 600 * 1024
    w = _wire(sb, "SASL_PLAINTEXT")
    try:
        w.send_raw(struct.pack(">ihhi", big, 17, 1, 1))
        assert w.closed_by_peer()
    finally:
        w.close()
    w = _wire(sb, "SASL_PLAINTEXT")
    try:
        assert _authenticate(w, "admin", "admin-secret").error_code == 0
        T = MetadataRequest[1].MetadataRequestTopic
        frame = w.frame(MetadataRequest[1](topics=[T(name=f"{i}" + "x" * 30000) for i in range(21)]), 1)
        assert len(frame) > big
        w.send_raw(frame)
        assert len(w.recv_frame()) > 0
    finally:
        w.close()
    # Plain sockets on the other listeners are untouched by it.
    with socket.create_connection(("127.0.0.1", sb.broker.listener_ports["PLAINTEXT"]), timeout=5):
        pass
