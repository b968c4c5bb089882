"""The certificates and keys a kube-apiserver needs, made fresh for each control plane.

One CA signs both the serving certificate (so a kubeconfig can pin it as `certificate-authority`) and the
admin's client certificate; kube-apiserver maps a client certificate's CN to the user name and each O to a
group, so `O=system:masters` makes the admin a superuser that RBAC never checks (the way kubeadm's
admin.conf and envtest's admin user work). The service-account key pair signs and verifies the
bound tokens that TokenRequest (`kubectl create token`) issues.

For a control plane with a node (harness.node) the serving certificate also names the addresses pods
reach the API server by (the `kubernetes` Service's cluster IP, the node's address, the Service's DNS
names), the CA key is written for kube-controller-manager's certificate signer, and each node and
control-plane component gets its own client certificate (its user and groups, as kubeadm issues them).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)  # a control plane lives for one test session or one demo


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files, all inside one directory."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_private_key: Path
    sa_public_key: Path
    ca_key: Path | None = None  # written only when asked (kube-controller-manager signs with it)
    # Client certificates by name: (certificate, key).
    clients: Mapping[str, tuple[Path, Path]] = field(default_factory=dict)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, *, private: bool = False) -> Path:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)
    return path


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org is not None:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate small clock differences
        .not_valid_after(now + _VALIDITY)
    )


def _client_cert(
    ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, user: str, groups: Sequence[str]
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    cert = (
        _builder(x509.Name(attrs), ca_name, key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def make_pki(
    directory: Path,
    *,
    admin_user: str,
    admin_group: str,
    serving_ips: Sequence[str] = (),
    serving_names: Sequence[str] = (),
    clients: Mapping[str, tuple[str, Sequence[str]]] | None = None,
    write_ca_key: bool = False,
) -> Pki:
    """Write a CA, a serving certificate for 127.0.0.1/localhost (plus `serving_ips`/`serving_names`), an
    admin client certificate, one client certificate per `clients` entry (name: (user, groups)) and the
    service-account signing key pair into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("ebb-test-control-plane-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
        .sign(ca_key, hashes.SHA256())
    )

    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving_cert = (
        _builder(_name("kube-apiserver"), ca_name, serving_key.public_key())
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    *(x509.DNSName(name) for name in serving_names),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in serving_ips),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin_cert = (
        _builder(_name(admin_user, admin_group), ca_name, admin_key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    # RSA, as kube-controller-manager's --service-account-private-key-file usually is; tokens are RS256.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_public = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )

    pem = serialization.Encoding.PEM
    written: dict[str, tuple[Path, Path]] = {}
    for name, (user, groups) in (clients or {}).items():
        cert, key = _client_cert(ca_key, ca_name, user, groups)
        written[name] = (
            _write(directory / f"{name}.crt", cert.public_bytes(pem)),
            _write(directory / f"{name}.key", _pem_key(key), private=True),
        )
    return Pki(
        ca_cert=_write(directory / "ca.crt", ca_cert.public_bytes(pem)),
        serving_cert=_write(directory / "apiserver.crt", serving_cert.public_bytes(pem)),
        serving_key=_write(directory / "apiserver.key", _pem_key(serving_key), private=True),
        admin_cert=_write(directory / "admin.crt", admin_cert.public_bytes(pem)),
        admin_key=_write(directory / "admin.key", _pem_key(admin_key), private=True),
        sa_private_key=_write(directory / "sa.key", _pem_key(sa_key), private=True),
        sa_public_key=_write(directory / "sa.pub", sa_public),
        ca_key=_write(directory / "ca.key", _pem_key(ca_key), private=True) if write_ca_key else None,
        clients=written,
    )
