"""The broker's credentials when nothing else provides them: a CA, a server certificate it signs, a
password. Pure functions (PEM text in, PEM text out); secrets.py stores them.

EC P-256 keys in PKCS#8, the key format Kafka's PEM keystores read (KIP-651) and every Kafka client
accepts; SHA-256 signatures. The CA may sign server certificates only (path length 0).
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import string
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSWORD_ALPHABET = string.ascii_letters + string.digits
PASSWORD_LENGTH = 32


@dataclass(frozen=True)
class KeyPair:
    cert: str  # PEM
    key: str  # PEM, PKCS#8


def password(length: int = PASSWORD_LENGTH) -> str:
    """Letters and digits only: it is expanded into the broker's --add-scram argument unquoted."""
    return "".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(length))


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _validity(days: int) -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)


def certificate_authority(name: str, days: int) -> KeyPair:
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start, end = _validity(days)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem(key))


def server_certificate(ca: KeyPair, name: str, dns_names: list[str], ips: list[str], days: int) -> KeyPair:
    """A certificate for `dns_names` and `ips` signed by `ca`, valid for TLS servers."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert.encode())
    ca_key = serialization.load_pem_private_key(ca.key.encode(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    key = _key()
    start, end = _validity(days)
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(min(end, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem(key))
