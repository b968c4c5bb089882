"""The webhook's own CA and serving certificate: what the API server accepts, renewed before expiry
without ever leaving a replica's certificate untrusted."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509

from ebb_operator.webhook.certificates import (
    CA_DAYS,
    LEAF_DAYS,
    RENEW_CA_DAYS,
    RENEW_LEAF_DAYS,
    Certificates,
    renew,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
HOSTS = ["ebb-operator-webhook.ebb.svc"]


def _days(n: float) -> datetime.timedelta:
    return datetime.timedelta(days=n)


def _trusted(certs: Certificates) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(certs.ca_bundle.encode())


def test_a_first_issue_makes_a_ca_and_a_certificate_for_the_webhooks_name() -> None:
    certs = renew(None, HOSTS, NOW)
    assert certs is not None
    leaf, (ca,) = certs.leaf(), _trusted(certs)
    leaf.verify_directly_issued_by(ca)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == HOSTS
    assert leaf.not_valid_after_utc - NOW == _days(LEAF_DAYS) and ca.not_valid_after_utc - NOW == _days(
        CA_DAYS
    )
    assert Certificates.from_secret(certs.to_secret()) == certs
    assert renew(certs, HOSTS, NOW + _days(LEAF_DAYS - RENEW_LEAF_DAYS - 1)) is None, "still good: kept"


def test_a_certificate_near_its_end_is_reissued_by_the_same_ca() -> None:
    certs = renew(None, HOSTS, NOW)
    assert certs is not None
    later = NOW + _days(LEAF_DAYS - RENEW_LEAF_DAYS + 1)
    renewed = renew(certs, HOSTS, later)
    assert renewed is not None and renewed.leaf() != certs.leaf()
    assert renewed.ca_bundle == certs.ca_bundle, "the configuration's CA bundle need not change"
    renewed.leaf().verify_directly_issued_by(_trusted(certs)[0])


def test_a_new_address_gets_a_certificate_that_names_it() -> None:
    certs = renew(None, HOSTS, NOW)
    renewed = renew(certs, ["127.0.0.1"], NOW)
    assert renewed is not None
    san = renewed.leaf().extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_a_ca_near_its_end_is_replaced_and_the_old_one_trusted_until_it_expires() -> None:
    certs = renew(None, HOSTS, NOW)
    assert certs is not None
    old_ca = _trusted(certs)[0]
    later = NOW + _days(CA_DAYS - RENEW_CA_DAYS + 1)
    renewed = renew(certs, HOSTS, later)
    assert renewed is not None
    new_ca, kept = _trusted(renewed)
    assert kept == old_ca and new_ca != old_ca, "a replica still serving the old certificate stays trusted"
    renewed.leaf().verify_directly_issued_by(new_ca)
    # Past the old CA's end, the next renewal no longer trusts it.
    much_later = old_ca.not_valid_after_utc + _days(LEAF_DAYS)
    pruned = renew(renewed, HOSTS, much_later)
    assert pruned is not None and old_ca not in _trusted(pruned)


def test_an_unreadable_secret_is_replaced() -> None:
    assert Certificates.from_secret({"tls.crt": "x"}) is None
    certs = renew(None, HOSTS, NOW)
    assert certs is not None
    assert Certificates.from_secret({**certs.to_secret(), "tls.crt": "not a certificate"}) is None


def test_a_tls_client_trusting_the_bundle_accepts_the_served_certificate(tmp_path: Path) -> None:
    """The handshake the API server makes: verify the chain and the name it calls."""
    certs = renew(None, ["127.0.0.1"], datetime.datetime.now(datetime.UTC))
    assert certs is not None
    (tmp_path / "tls.crt").write_text(certs.cert)
    (tmp_path / "tls.key").write_text(certs.key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=certs.ca_bundle)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with server.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            assert tls.recv(2) == b"ok"
        thread.join(10)
