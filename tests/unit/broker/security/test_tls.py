"""security.tls: PEM keystores as Kafka reads them, and the certificate principal as Kafka prints it."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from ebb_broker.security.tls import (
    PrincipalMapper,
    PrincipalMappingError,
    TlsConfigError,
    principal_of,
    server_context,
)
from harness.tls import TestCA


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("pki"))


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """A TLS handshake through memory buffers; returns the server side once both sides are done."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    cli = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(10):
        for side, obj in (("c", cli), ("s", srv)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return srv
    raise AssertionError("handshake did not finish")


def _client(ca: TestCA, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca.ca_pem))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def test_keystore_file_and_inline_encrypted_key(ca: TestCA) -> None:
    srv = ca.issue("srv", "CN=localhost", server=True)
    from_file = server_context({"ssl.keystore.location": str(srv.keystore)}, "SSL")
    _handshake(from_file, _client(ca))
    locked = ca.issue("locked", "CN=localhost", server=True, password="s3cret")
    inline = server_context(
        {
            "ssl.keystore.key": locked.key.read_text(),
            "ssl.keystore.certificate.chain": locked.cert.read_text(),
            "ssl.key.password": "s3cret",
        },
        "SSL",
    )
    _handshake(inline, _client(ca))
    with pytest.raises(TlsConfigError, match=r"set ssl\.key\.password"):
        server_context(
            {
                "ssl.keystore.key": locked.key.read_text(),
                "ssl.keystore.certificate.chain": locked.cert.read_text(),
            },
            "SSL",
        )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/x"}, "must be PEM"),
        ({"ssl.keystore.password": "p", "ssl.keystore.location": "/x"}, "not allowed with PEM"),
        ({}, "needs ssl.keystore.location"),
        ({"ssl.keystore.location": "/nope.pem"}, "is not a file"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, r"ssl\.enabled\.protocols"),
    ],
)
def test_unusable_settings_name_the_key(ca: TestCA, settings: dict[str, str], message: str) -> None:
    with pytest.raises(TlsConfigError, match=message):
        server_context(settings, "SSL")


def test_mtls_principal_is_the_rfc2253_dn(ca: TestCA) -> None:
    srv = ca.issue("srv2", "CN=localhost", server=True)
    alice = ca.issue("alice", "CN=alice,OU=eng,O=Example")
    ctx = server_context(
        {
            "ssl.keystore.location": str(srv.keystore),
            "ssl.truststore.location": str(ca.ca_pem),
            "ssl.client.auth": "required",
        },
        "MTLS",
    )
    conn = _handshake(ctx, _client(ca, alice.cert, alice.key))
    assert principal_of(conn, PrincipalMapper()) == "User:CN=alice,OU=eng,O=Example"
    rules = PrincipalMapper("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L, DEFAULT")
    assert principal_of(conn, rules) == "User:alice@eng"
    assert principal_of(None, rules) == "User:ANONYMOUS"


def test_principal_mapping_rules_as_kafkas_ssl_principal_mapper() -> None:
    m = PrincipalMapper("RULE:^CN=([a-z]+),OU=ops,.*$/$1/U,RULE:^CN=(.*?),.*$/svc-$1/")
    assert m.name("CN=bob,OU=ops,O=Example") == "BOB"
    assert m.name("CN=alice,OU=eng,O=Example") == "svc-alice"
    with pytest.raises(PrincipalMappingError):
        m.name("O=Example")
    with pytest.raises(TlsConfigError):
        PrincipalMapper("RULE:broken")
