"""The broker's credentials Secrets, made once: what a Secret already holds is never replaced.

`prepare` (before the release's objects exist, so before the broker starts):
- the admin password, where the chart's admin Secret is missing;
- the broker's TLS Secret (a CA and a certificate for the broker's names), where it is missing and nothing
  else issues it; or, with cert-manager and the chart's own Issuer, the CA that Issuer signs with;
- `helm.sh/resource-policy: keep` on the Secrets an earlier chart (0.1.0) rendered as templates: this
  chart renders none, and Helm deletes on upgrade what the new manifest lacks unless the live object says
  keep.

`client_secret` (after the release's objects exist, so after cert-manager has issued): the default
KafkaCluster's client properties, from the admin password and the CA of the broker's TLS Secret, written
again when either changed (a CA cert-manager renewed).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ebb_operator import kube
from ebb_operator.install import material

log = logging.getLogger(__name__)
KEEP = {"helm.sh/resource-policy": "keep"}
TLS_TYPE = "kubernetes.io/tls"


class MaterialError(RuntimeError):
    """A Secret cannot be made or used as the chart asks; the message says what to set."""


@dataclass(frozen=True)
class Certificate:
    """What a generated broker certificate covers."""

    common_name: str
    dns_names: list[str]
    ips: list[str]
    days: int


def _exists(namespace: str, name: str) -> bool:
    try:
        kube.read_secret(namespace, name)
    except kube.NotFoundError:
        return False
    return True


def keep(namespace: str, names: list[str]) -> None:
    """Mark the existing ones `keep`: Helm then leaves them when an upgrade's manifest lacks them."""
    for name in names:
        try:
            kube.patch_secret(namespace, name, annotations=KEEP)
        except kube.NotFoundError:
            continue
        log.info("Secret %s/%s: kept across upgrades (helm.sh/resource-policy: keep)", namespace, name)


def _create(
    namespace: str, name: str, data: dict[str, str], labels: dict[str, str], secret_type: str
) -> None:
    try:
        kube.create_secret(namespace, name, data, labels, secret_type=secret_type)
    except kube.AlreadyExistsError:  # made meanwhile (a second hook run): it stands
        return
    log.info("Secret %s/%s: created", namespace, name)


def admin_password(namespace: str, name: str, user: str, labels: dict[str, str]) -> None:
    if not _exists(namespace, name):
        _create(namespace, name, {"username": user, "password": material.password()}, labels, "Opaque")


def broker_tls(namespace: str, name: str, ca_name: str, cert: Certificate, labels: dict[str, str]) -> None:
    """A CA and the broker's certificate it signs, in one kubernetes.io/tls Secret (tls.crt, tls.key,
    ca.crt)."""
    if _exists(namespace, name):
        return
    ca = material.certificate_authority(ca_name, cert.days)
    issued = material.server_certificate(ca, cert.common_name, cert.dns_names, cert.ips, cert.days)
    data = {"tls.crt": issued.cert, "tls.key": issued.key, "ca.crt": ca.cert}
    _create(namespace, name, data, labels, TLS_TYPE)


def issuer_ca(namespace: str, name: str, ca_name: str, days: int, labels: dict[str, str]) -> None:
    """The CA a cert-manager CA Issuer signs the broker's certificate with (its tls.crt and tls.key)."""
    if _exists(namespace, name):
        return
    ca = material.certificate_authority(ca_name, days)
    _create(namespace, name, {"tls.crt": ca.cert, "tls.key": ca.key, "ca.crt": ca.cert}, labels, TLS_TYPE)


def _ca_of(namespace: str, tls_secret: str, wait_seconds: float) -> str:
    """The CA in the broker's TLS Secret, waiting (bounded) for cert-manager to issue it."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            data = kube.read_secret(namespace, tls_secret)
        except kube.NotFoundError:
            data = {}
        if data.get("ca.crt"):
            return data["ca.crt"]
        if data.get("tls.crt"):
            raise MaterialError(
                f"Secret {namespace}/{tls_secret} has no ca.crt, so the operator cannot be told which CA "
                "to trust: set operator.defaultCluster.credentialsSecret to a Secret with the operator's "
                "client properties (security.protocol, sasl.*, ssl.ca.pem)"
            )
        if time.monotonic() > deadline:
            raise MaterialError(f"Secret {namespace}/{tls_secret} did not appear within {wait_seconds:.0f} s")
        time.sleep(2)


def client_secret(
    namespace: str,
    name: str,
    *,
    user: str,
    admin_secret: str,
    tls_secret: str,
    labels: dict[str, str],
    wait_seconds: float,
) -> None:
    """The client properties of the chart's broker as its admin: created, or updated where they differ."""
    try:
        admin = kube.read_secret(namespace, admin_secret)
    except kube.NotFoundError:
        raise MaterialError(f"the admin Secret {namespace}/{admin_secret} does not exist") from None
    if not admin.get("password"):
        raise MaterialError(f"the admin Secret {namespace}/{admin_secret} has no key `password`")
    wanted = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": admin["password"],
        "ssl.ca.pem": _ca_of(namespace, tls_secret, wait_seconds),
    }
    try:
        current = kube.read_secret(namespace, name)
    except kube.NotFoundError:
        _create(namespace, name, wanted, labels, "Opaque")
        return
    if any(current.get(k) != v for k, v in wanted.items()):
        kube.patch_secret(namespace, name, data=wanted)
        log.info("Secret %s/%s: updated (the admin password or the broker's CA changed)", namespace, name)
