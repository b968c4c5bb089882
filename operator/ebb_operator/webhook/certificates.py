"""The webhook's own CA and serving certificate, when cert-manager does not provide them.

The API server trusts the CA bundle in the ValidatingWebhookConfiguration and checks the serving
certificate against the name it calls (`<service>.<namespace>.svc`, or the local address). Every replica
serves the same certificate, kept in one Secret; `renew` decides, from what the Secret holds, whether a
replica must issue something new:

- a serving certificate lives LEAF_DAYS and is re-issued, by the same CA, once RENEW_LEAF_DAYS remain (or
  when it does not name the webhook's address): the CA bundle does not change, so nothing else must;
- the CA lives CA_DAYS and is replaced once RENEW_CA_DAYS remain; the bundle then trusts the old CA as
  well until it expires, so a replica still serving a certificate of the old CA is trusted meanwhile.

The certificates themselves are ebb_operator.pki's (ECDSA P-256: what the API server accepts, and fast
to make).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from ebb_operator import pki

CA_DAYS, RENEW_CA_DAYS = 3650, 365
LEAF_DAYS, RENEW_LEAF_DAYS = 90, 30


@dataclass(frozen=True)
class Certificates:
    """PEM texts as the Secret (type kubernetes.io/tls, plus the CA's key) stores them."""

    ca_bundle: str  # ca.crt: the CAs the API server trusts (the current one first)
    ca_key: str  # ca.key: the current CA's private key
    cert: str  # tls.crt: the serving certificate
    key: str  # tls.key

    def to_secret(self) -> dict[str, str]:
        return {"ca.crt": self.ca_bundle, "ca.key": self.ca_key, "tls.crt": self.cert, "tls.key": self.key}

    @classmethod
    def from_secret(cls, data: dict[str, str]) -> Certificates | None:
        """None when a key is missing or unreadable (the Secret is then replaced)."""
        try:
            found = cls(data["ca.crt"], data["ca.key"], data["tls.crt"], data["tls.key"])
            found.authority()
            found.leaf()
        except (KeyError, ValueError):
            return None
        return found

    def authority(self) -> x509.Certificate:
        return x509.load_pem_x509_certificates(self.ca_bundle.encode())[0]

    def leaf(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert.encode())


def _authority(now: datetime.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    return pki.authority("ebb-operator webhook CA", now, CA_DAYS)


def _serving(
    hosts: list[str], ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, now: datetime.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    return pki.serving(hosts[0], hosts, ca, ca_key, now, LEAF_DAYS)


def _names(cert: x509.Certificate) -> set[str]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) for n in san}


def _left(cert: x509.Certificate, now: datetime.datetime) -> datetime.timedelta:
    return cert.not_valid_after_utc - now


def renew(current: Certificates | None, hosts: list[str], now: datetime.datetime) -> Certificates | None:
    """What the Secret must hold from now on, or None when `current` is still good for `hosts`."""
    if current is not None:
        ca, leaf = current.authority(), current.leaf()
        ca_good = _left(ca, now) > datetime.timedelta(days=RENEW_CA_DAYS)
        leaf_good = (
            _left(leaf, now) > datetime.timedelta(days=RENEW_LEAF_DAYS)
            and leaf.issuer == ca.subject
            and set(hosts) <= _names(leaf)
        )
        if ca_good and leaf_good:
            return None
        if ca_good:
            cert, key = _serving(hosts, ca, pki.load_key(current.ca_key), now)
            return Certificates(
                _trusted([ca], current, now), current.ca_key, pki.cert_pem(cert), pki.key_pem(key)
            )
    ca, ca_key = _authority(now)
    cert, key = _serving(hosts, ca, ca_key, now)
    return Certificates(
        _trusted([ca], current, now), pki.key_pem(ca_key), pki.cert_pem(cert), pki.key_pem(key)
    )


def _trusted(first: list[x509.Certificate], current: Certificates | None, now: datetime.datetime) -> str:
    """The CA bundle: `first`, then the CAs `current` trusted that have not expired (a replacement CA keeps
    its predecessor trusted until the certificates it signed are gone)."""
    previous = x509.load_pem_x509_certificates(current.ca_bundle.encode()) if current else []
    kept = [c for c in previous if _left(c, now) > datetime.timedelta(0) and c not in first]
    return "".join(pki.cert_pem(c) for c in [*first, *kept])
