"""The broker's credentials the install hook makes: a CA that signs server certificates only, a certificate
for the broker's names that TLS clients verify against it, a password safe in a command line."""

from __future__ import annotations

import ssl
from pathlib import Path

from cryptography import x509

from ebb_operator.install import material


def test_the_certificate_is_signed_by_the_ca_for_the_brokers_names(tmp_path: Path) -> None:
    ca = material.certificate_authority("ebb-broker-ca", 30)
    names = ["ebb-broker.ebb.svc", "*.h.ebb.svc"]
    issued = material.server_certificate(ca, "ebb-broker", names, ["127.0.0.1"], 30)
    ca_cert = x509.load_pem_x509_certificate(ca.cert.encode())
    cert = x509.load_pem_x509_certificate(issued.cert.encode())
    cert.verify_directly_issued_by(ca_cert)
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length == 0
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.DNSName) == names
    assert [str(ip) for ip in alt.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert "PRIVATE KEY" in issued.key and "ENCRYPTED" not in issued.key

    # A TLS handshake: Python's ssl (the broker's) serves it, a client trusting only the CA verifies it.
    (tmp_path / "chain.pem").write_text(issued.cert)
    (tmp_path / "key.pem").write_text(issued.key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "chain.pem", tmp_path / "key.pem")
    client = ssl.create_default_context(cadata=ca.cert)
    a, b = ssl.MemoryBIO(), ssl.MemoryBIO()
    c, d = ssl.MemoryBIO(), ssl.MemoryBIO()
    srv = server.wrap_bio(a, b, server_side=True)
    cli = client.wrap_bio(c, d, server_hostname="ebb-broker.ebb.svc")
    for _ in range(10):
        for end, out, peer_in in ((cli, d, a), (srv, b, c)):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
            peer_in.write(out.read())
    assert cli.version() is not None and srv.version() is not None


def test_passwords_are_long_random_letters_and_digits() -> None:
    passwords = {material.password() for _ in range(20)}
    assert len(passwords) == 20
    assert all(len(p) == 32 and p.isalnum() and p.isascii() for p in passwords)
