"""Fixtures of the compat tier: a real ebb-broker process and the three real clients.

The process launcher lives in harness/ebb_broker.py so other tiers reuse it.
"""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from scramp import ScramClient

from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from harness.tls import Issued, TestCA
from tests.compat.clients import CLIENTS, Client, Security
from tests.compat.wire import Wire

# Small __consumer_offsets keeps each broker start quick; the layout is the same as with 50. No initial
# rebalance delay, as the Apache Kafka harness (harness.kafka.FAST_SETTINGS): a test that joins a group
# does not wait 3 s; the tests of the delay itself start brokers with the default.
FAST_BROKER = {"offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    """One broker shared by the scenarios that do not restart it."""
    root = tmp_path_factory.mktemp("ebb-shared")
    b = EbbBroker(root / "data", configs=FAST_BROKER)
    b.start()
    yield b
    assert b.stop() == 0, "ebb-broker did not shut down cleanly on SIGTERM"


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., EbbBroker]]:
    """Brokers of their own (restarts, kill -9, special configs); all stopped at teardown."""
    started: list[EbbBroker] = []

    def make(configs: dict[str, str] | None = None, name: str = "data") -> EbbBroker:
        b = EbbBroker(
            tmp_path / name,
            configs={**FAST_BROKER, **(configs or {})},
            metrics_port=free_port(),
            log_dir=tmp_path,
        )
        b.start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.kill() if not b.alive() else b.stop()


@pytest.fixture(params=sorted(CLIENTS))
def client_cls(request: pytest.FixtureRequest) -> Callable[[str], Client]:
    return CLIENTS[request.param]


@pytest.fixture
def client(client_cls: Callable[[str], Client], broker: EbbBroker) -> Iterator[Client]:
    c = client_cls(broker.bootstrap)
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@dataclass
class SecureBroker:
    """One ebb-broker with every kind of listener and SCRAM users, shared by the security tests.

    Listeners: PLAINTEXT (User:ANONYMOUS, a super user: the tests' own setup), SASL_PLAINTEXT, SASL_SSL
    and MTLS (SSL with required client certificates). Users (SCRAM-SHA-256 and -512, so PLAIN too):
    admin (a super user), alice, bob. The authorizer is on: every other principal needs ACLs.
    """

    broker: EbbBroker
    ca: TestCA
    alice_cert: Issued
    passwords: dict[str, str]

    def security(self, listener: str, user: str | None = None, mechanism: str = "SCRAM-SHA-512") -> Security:
        protocol = {"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL", "MTLS": "SSL"}.get(
            listener, "PLAINTEXT"
        )
        ca = str(self.ca.ca_pem) if protocol in ("SSL", "SASL_SSL") else None
        if listener == "MTLS":
            return Security(
                "SSL", cafile=ca, certfile=str(self.alice_cert.cert), keyfile=str(self.alice_cert.key)
            )
        if user is None:
            return Security(protocol, cafile=ca)
        return Security(protocol, mechanism, user, self.passwords[user], cafile=ca)

    def client(
        self, name: str, listener: str, user: str | None = None, mechanism: str = "SCRAM-SHA-512"
    ) -> Client:
        return CLIENTS[name](self.broker.bootstrap_of(listener), self.security(listener, user, mechanism))

    def wire(self, listener: str, user: str | None = None) -> Wire:
        """A raw connection (TLS on SASL_SSL), authenticated as `user` with SCRAM-SHA-512 when given."""
        w = Wire(self.broker.bootstrap_of(listener))
        try:
            if listener == "SASL_SSL":
                w.sock = ssl.create_default_context(cafile=str(self.ca.ca_pem)).wrap_socket(
                    w.sock, server_hostname="localhost"
                )
            if user is not None:
                resp = scram_authenticate(w, user, self.passwords[user])
                assert resp.error_code == 0, resp
        except BaseException:
            w.close()  # a failed handshake or login: the connection is not handed out
            raise
        return w


def scram_authenticate(w: Wire, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Any:
    """SaslHandshake v1 + SCRAM in SaslAuthenticate v2, as Java's client does; the last response."""
    w.send_raw(w.frame(SaslHandshakeRequest[1](mechanism=mechanism), 1))
    hs = SaslHandshakeResponse.decode(w.recv_frame(), version=1, header=True)
    assert hs.error_code == 0 and mechanism in hs.mechanisms
    client = ScramClient([mechanism], user, password)
    w.send_raw(w.frame(SaslAuthenticateRequest[2](auth_bytes=client.get_client_first().encode()), 2))
    first = SaslAuthenticateResponse.decode(w.recv_frame(), version=2, header=True)
    if first.error_code:
        return first
    client.set_server_first(bytes(first.auth_bytes).decode())
    w.send_raw(w.frame(SaslAuthenticateRequest[2](auth_bytes=client.get_client_final().encode()), 2))
    final = SaslAuthenticateResponse.decode(w.recv_frame(), version=2, header=True)
    if not final.error_code:
        client.set_server_final(bytes(final.auth_bytes).decode())  # the server proved it knows the key too
    return final


SECURE_CONFIGS = {
    **FAST_BROKER,
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL"
    ),
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.mtls.ssl.client.auth": "required",
    "ssl.keystore.type": "PEM",
    "ssl.truststore.type": "PEM",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    root = tmp_path_factory.mktemp("secure")
    ca = TestCA(root / "pki")
    server = ca.issue("broker", "CN=localhost", server=True)
    passwords = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
    b = EbbBroker(
        root / "data",
        configs={
            **SECURE_CONFIGS,
            "ssl.keystore.location": str(server.keystore),
            "ssl.truststore.location": str(ca.ca_pem),
        },
        metrics_port=free_port(),
        add_scram=[
            f"{mech}=[name={user},password={pw}]"
            for user, pw in passwords.items()
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        ],
    ).start()
    try:
        yield SecureBroker(b, ca, ca.issue("alice", "CN=alice,OU=eng,O=Example"), passwords)
    finally:
        assert b.stop() == 0


@dataclass(frozen=True)
class Side:
    """One of the two brokers a side-by-side test runs against, with the same assertions."""

    name: str
    bootstrap: str

    @property
    def is_ebb(self) -> bool:
        return self.name == "ebb-broker"


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def side(request: pytest.FixtureRequest) -> Side:
    """The shared ebb-broker, then the shared Apache Kafka 4.3.1: where a behaviour is Kafka's, a test
    taking `side` asserts it on both."""
    if request.param == "ebb-broker":
        return Side("ebb-broker", request.getfixturevalue("broker").bootstrap)
    return Side("apache-kafka", request.getfixturevalue("apache_kafka_broker").bootstrap_servers)
