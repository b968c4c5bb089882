"""Listeners and TLS (issue 11, item 1): several listeners, each advertised on its own, TLS from PEM files
with the three real clients, and mTLS that refuses clients without a certificate."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from harness.bounded import until
from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from harness.tls import Issued, TestCA
from tests.compat.clients import CLIENTS, Security
from tests.compat.conftest import FAST_BROKER
from tests.compat.wire import Wire

CLOSED = "ebb_connections_closed_by_broker_total"


@dataclass
class TlsBroker:
    broker: EbbBroker
    ca: TestCA
    alice: Issued


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    root = tmp_path_factory.mktemp("tls")
    ca = TestCA(root / "pki")
    server = ca.issue("broker", "CN=localhost", server=True)
    b = EbbBroker(
        root / "data",
        metrics_port=free_port(),
        configs={
            **FAST_BROKER,
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.ca_pem),
            "listener.name.mtls.ssl.client.auth": "required",
        },
    ).start()
    try:
        yield TlsBroker(b, ca, ca.issue("alice", "CN=alice,OU=eng,O=Example"))
    finally:
        assert b.stop() == 0


@pytest.mark.parametrize("client_name", sorted(CLIENTS))
def test_clients_produce_and_consume_over_tls(tls: TlsBroker, client_name: str) -> None:
    """Each client verifies the broker's certificate against the CA and its host name (127.0.0.1 SAN)."""
    c = CLIENTS[client_name](tls.broker.bootstrap_of("SSL"), Security("SSL", cafile=str(tls.ca.ca_pem)))
    topic = f"tls-{client_name}"
    try:
        c.create_topic(topic)
        c.produce(topic, [(b"k", b"over tls")])
        assert [(r.key, r.value) for r in c.consume(topic, 1)] == [(b"k", b"over tls")]
    finally:
        c.close()


def test_each_listener_advertises_itself(tls: TlsBroker) -> None:
    """Metadata answers with the endpoint of the listener the request came in on (clients then stay on it)."""
    b = tls.broker
    plain = Wire(b.bootstrap_of("PLAINTEXT"))
    try:
        plain.send_raw(plain.frame(MetadataRequest[1](topics=[]), 1))
        assert (
            MetadataResponse.decode(plain.recv_frame(), version=1, header=True).brokers[0].port
            == b.listener_ports["PLAINTEXT"]
        )
    finally:
        plain.close()
    ctx = ssl.create_default_context(cafile=str(tls.ca.ca_pem))
    with (
        socket.create_connection(("127.0.0.1", b.listener_ports["SSL"]), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as s,
    ):
        w = Wire.__new__(Wire)
        w.sock, w.correlation = s, 0
        w.send_raw(w.frame(MetadataRequest[1](topics=[]), 1))
        assert (
            MetadataResponse.decode(w.recv_frame(), version=1, header=True).brokers[0].port
            == b.listener_ports["SSL"]
        )


def test_mtls_listener_requires_a_client_certificate(tls: TlsBroker) -> None:
    ctx = ssl.create_default_context(cafile=str(tls.ca.ca_pem))
    port = tls.broker.listener_ports["MTLS"]
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as s,
    ):
        # TLS 1.3 reports the missing certificate after the handshake: the first read gets the alert
        # (or the closed connection), never a response.
        try:
            s.sendall(Wire.__new__(Wire).frame(MetadataRequest[1](topics=[]), 1, correlation_id=1))
            answer = s.recv(4)
        except (ssl.SSLError, ConnectionError):
            answer = b""
        assert answer == b""
    # asyncio closes the socket on the failed handshake before the broker's accept task counts it: wait
    # (bounded) for the count rather than race it.
    until("the failed handshake counted", lambda: tls.broker.metric(CLOSED, reason="tls_handshake") >= 1, 10)
    assert tls.broker.metric(CLOSED, reason="tls_handshake") == 1
    with_cert = Security(
        "SSL", cafile=str(tls.ca.ca_pem), certfile=str(tls.alice.cert), keyfile=str(tls.alice.key)
    )
    c = CLIENTS["confluent-kafka"](tls.broker.bootstrap_of("MTLS"), with_cert)
    c.create_topic("mtls")
    c.produce("mtls", [(None, b"with a certificate")])
    assert [r.value for r in c.consume("mtls", 1)] == [b"with a certificate"]
