"""The broker's credentials when nothing else provides them: a CA, a server certificate it signs (made by
ebb_operator.pki), a password. Pure functions (PEM text in, PEM text out); secrets.py stores them."""

from __future__ import annotations

import datetime
import secrets
import string
from dataclasses import dataclass

from cryptography import x509

from ebb_operator import pki

PASSWORD_ALPHABET = string.ascii_letters + string.digits
PASSWORD_LENGTH = 32


@dataclass(frozen=True)
class KeyPair:
    cert: str  # PEM
    key: str  # PEM, PKCS#8


def password(length: int = PASSWORD_LENGTH) -> str:
    """Letters and digits only: it is expanded into the broker's --add-scram argument unquoted."""
    return "".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(length))


def certificate_authority(name: str, days: int) -> KeyPair:
    cert, key = pki.authority(name, datetime.datetime.now(datetime.UTC), days)
    return KeyPair(pki.cert_pem(cert), pki.key_pem(key))


def server_certificate(ca: KeyPair, name: str, dns_names: list[str], ips: list[str], days: int) -> KeyPair:
    """A certificate for `dns_names` and `ips` signed by `ca`, valid for TLS servers."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert.encode())
    now = datetime.datetime.now(datetime.UTC)
    cert, key = pki.serving(name, [*dns_names, *ips], ca_cert, pki.load_key(ca.key), now, days)
    return KeyPair(pki.cert_pem(cert), pki.key_pem(key))
