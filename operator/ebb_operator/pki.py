"""Certificates Ebb makes itself: a CA and the TLS server certificates it signs, for the broker (the
install hook, ebb_operator.install) and for the admission webhook (ebb_operator.webhook).

EC P-256 keys in PKCS#8, the key format Kafka's PEM keystores read (KIP-651) and what the API server and
every Kafka client accept; SHA-256 signatures. A CA signs server certificates only (path length 0), and
a certificate never outlives the CA that signed it.
"""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Certificates start this far in the past: clocks of the API server, the brokers and the clients differ.
BACKDATE = datetime.timedelta(minutes=5)

# A CA signs certificates and nothing else.
_CA_USAGE = x509.KeyUsage(
    digital_signature=False,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def load_key(pem: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    return key


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _builder(
    subject: str, issuer: x509.Name | None, now: datetime.datetime, until: datetime.datetime
) -> x509.CertificateBuilder:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(until)
    )


def authority(
    common_name: str, now: datetime.datetime, days: int
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA valid `days` from `now`, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(common_name, None, now, now + datetime.timedelta(days=days))
        .public_key(key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def serving(
    common_name: str,
    hosts: list[str],
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
    days: int,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A TLS server certificate for `hosts` (DNS names and IP addresses), signed by `ca`, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    until = min(now + datetime.timedelta(days=days), ca.not_valid_after_utc)
    cert = (
        _builder(common_name, ca.subject, now, until)
        .public_key(key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key
