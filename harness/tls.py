"""A test CA and the PEM files Kafka-protocol TLS needs: a broker keystore, client certificates, a truststore.

The files are laid out the way Kafka's PEM settings (KIP-651) read them, so the same paths configure
ebb-broker, Apache Kafka and its Java tools, and the Python clients: `ca.pem` (the truststore),
`<name>-keystore.pem` (PKCS#8 private key followed by the certificate chain, `ssl.keystore.location`), and
`<name>.crt` / `<name>.key` apart for clients that want two files. Keys are EC P-256 (quick to make, and
Java's PEM loader reads them).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)
_OIDS = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME}


@dataclass(frozen=True)
class Issued:
    """One certificate's files."""

    cert: Path
    key: Path
    keystore: Path  # key + certificate + CA, Kafka's ssl.keystore.type=PEM file


class TestCA:
    """A CA in `directory` that issues server and client certificates."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path, name: str = "ebb-test-ca") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.ca_pem = directory / "ca.pem"
        self.ca_pem.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        subject: str,
        *,
        server: bool = False,
        hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
        password: str | None = None,
    ) -> Issued:
        """A certificate for `subject` (``CN=alice,OU=eng,O=Example``, last RDN first as Kafka prints it),
        for a server (SANs `hosts`) or a client; `password` encrypts the PKCS#8 key (ssl.key.password)."""
        rdns = [
            x509.NameAttribute(_OIDS[k.strip()], v) for k, v in (p.split("=", 1) for p in subject.split(","))
        ]
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(list(reversed(rdns))))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
        )
        if server:
            sans: list[x509.GeneralName] = []
            for h in hosts:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(h)))
                except ValueError:
                    sans.append(x509.DNSName(h))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
        else:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        paths = Issued(
            self.directory / f"{name}.crt",
            self.directory / f"{name}.key",
            self.directory / f"{name}-keystore.pem",
        )
        paths.cert.write_bytes(cert_pem)
        paths.key.write_bytes(key_pem)
        paths.keystore.write_bytes(key_pem + cert_pem + self.ca_pem.read_bytes())
        for p in (paths.key, paths.keystore):
            p.chmod(0o600)
        return paths
