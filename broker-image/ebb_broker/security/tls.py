"""TLS for SSL and SASL_SSL listeners from PEM (KIP-651), and the principal of a client certificate.

Kafka's settings, per listener (``listener.name.<l>.ssl.*`` over the broker-wide ``ssl.*``):
- ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (a file with the private key and the certificate
  chain) or the inline ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``; ``ssl.key.password`` for
  an encrypted PKCS#8 key. Store passwords are refused with PEM, as Kafka refuses them.
- ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` or inline ``ssl.truststore.certificates``:
  the CAs client certificates must chain to.
- ``ssl.client.auth`` = ``none`` | ``requested`` | ``required`` (mTLS). As in Kafka, a SASL_SSL listener
  takes only the listener-prefixed value (the caller passes the effective one).
- ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``).
- ``ssl.principal.mapping.rules`` (default ``DEFAULT``): the client certificate's subject DN as Java's
  ``X500Principal.getName()`` prints it (RFC 2253: the last RDN first, ``CN=alice,OU=eng,O=Example``),
  rewritten by the first ``RULE:pattern/replacement/[LU]`` whose pattern matches the whole DN.

Inline keys are handed to OpenSSL through an anonymous in-memory file (memfd), never written to disk.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

ANONYMOUS = "User:ANONYMOUS"
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# Kafka's SslPrincipalMapper.RULE_SPLITTER / RULE_PARSER.
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used; the message names the key."""


class PrincipalMappingError(ValueError):
    """No ``ssl.principal.mapping.rules`` rule applies to a certificate's DN (the connection is refused)."""


def _pem_file(text: str, label: str) -> str:
    """A path OpenSSL can read holding ``text``: an in-memory file, so inline keys never touch a disk."""
    fd = os.memfd_create(f"ebb-{label}", os.MFD_CLOEXEC)
    os.write(fd, text.encode())
    return f"/proc/self/fd/{fd}"


def _close_pem_file(path: str) -> None:
    if path.startswith("/proc/self/fd/"):
        os.close(int(path.rsplit("/", 1)[1]))


def server_context(settings: Mapping[str, str | None], listener: str) -> ssl.SSLContext:
    """The SSLContext of one listener from its effective ``ssl.*`` settings; raises TlsConfigError."""

    def get(key: str) -> str | None:
        value = settings.get(key)
        return value if value not in (None, "") else None

    for kind in ("keystore", "truststore"):
        if (get(f"ssl.{kind}.type") or "PEM").upper() != "PEM":
            raise TlsConfigError(
                f"{listener}: ssl.{kind}.type must be PEM (JKS and PKCS12 are not supported)"
            )
        if get(f"ssl.{kind}.password"):
            raise TlsConfigError(
                f"{listener}: ssl.{kind}.password is not allowed with PEM stores (as in Kafka)"
            )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _PROTOCOLS]
    if unknown or not enabled:
        raise TlsConfigError(f"{listener}: ssl.enabled.protocols {unknown or enabled} (use TLSv1.2, TLSv1.3)")
    versions = sorted(_PROTOCOLS[p] for p in enabled)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]

    location, key, chain = (
        get("ssl.keystore.location"),
        get("ssl.keystore.key"),
        get("ssl.keystore.certificate.chain"),
    )
    if location and (key or chain):
        raise TlsConfigError(f"{listener}: give ssl.keystore.location or the inline key and chain, not both")
    if not location and not (key and chain):
        raise TlsConfigError(
            f"{listener}: a TLS listener needs ssl.keystore.location, or ssl.keystore.key with "
            "ssl.keystore.certificate.chain"
        )
    given = get("ssl.key.password")

    def password() -> str:
        # Never OpenSSL's own prompt on the terminal: an encrypted key without a password is an error.
        if given is None:
            raise TlsConfigError(f"{listener}: the private key is encrypted; set ssl.key.password")
        return given

    try:
        if location:
            if not Path(location).is_file():
                raise TlsConfigError(f"{listener}: ssl.keystore.location {location} is not a file")
            ctx.load_cert_chain(location, password=password)
        else:
            assert key is not None and chain is not None
            cert_path, key_path = _pem_file(chain, "chain"), _pem_file(key, "key")
            try:
                ctx.load_cert_chain(cert_path, key_path, password=password)
            finally:
                _close_pem_file(cert_path)
                _close_pem_file(key_path)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"{listener}: the keystore cannot be loaded: {exc}") from None

    trust_location, trust_inline = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if trust_location:
            ctx.load_verify_locations(cafile=trust_location)
        if trust_inline:
            ctx.load_verify_locations(cadata=trust_inline)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"{listener}: the truststore cannot be loaded: {exc}") from None
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"{listener}: ssl.client.auth must be none, requested or required, got {auth!r}")
    if auth != "none" and not (trust_location or trust_inline):
        raise TlsConfigError(f"{listener}: ssl.client.auth={auth} needs a truststore to verify clients with")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


@dataclass(frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""


class PrincipalMapper:
    """Kafka's SslPrincipalMapper: ``ssl.principal.mapping.rules`` applied to an RFC 2253 DN."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        pos = 0
        text = rules.strip()
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise TlsConfigError(f"ssl.principal.mapping.rules: cannot parse {text[pos:]!r}")
            if m.group(1) == "DEFAULT":
                self.rules.append(_Rule(True))
            else:
                try:
                    pattern = re.compile(m.group(2).replace("\\/", "/"))
                except re.error as exc:
                    raise TlsConfigError(
                        f"ssl.principal.mapping.rules: bad pattern {m.group(2)!r}: {exc}"
                    ) from None
                # Java's $1 in a replacement is Python's \g<1>.
                replacement = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(3).replace("\\/", "/"))
                self.rules.append(_Rule(False, pattern, replacement, m.group(4)))
            pos = m.end()
        if not self.rules:
            self.rules.append(_Rule(True))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule.default:
                return dn
            assert rule.pattern is not None
            if rule.pattern.fullmatch(dn):
                out = rule.pattern.sub(rule.replacement, dn)
                return out.lower() if rule.case == "L" else out.upper() if rule.case == "U" else out
        raise PrincipalMappingError(f"no ssl.principal.mapping.rules rule applies to {dn}")


# The attribute keywords X500Principal.getName(RFC2253) prints; any other attribute is printed as its OID
# and the hex of its DER value.
_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.USER_ID: "UID",
}
_UTF8_STRING = 12


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(attr: x509.NameAttribute) -> str:
    raw = attr.value.encode() if isinstance(attr.value, str) else bytes(attr.value)
    asn1 = getattr(attr, "_type", None)
    tag = int(getattr(asn1, "value", _UTF8_STRING))
    length = bytes([len(raw)]) if len(raw) < 128 else bytes([0x82]) + len(raw).to_bytes(2, "big")
    return "#" + (bytes([tag]) + length + raw).hex()


def subject_dn(der: bytes) -> str:
    """The certificate's subject as Java's X500Principal.getName() (RFC 2253) prints it: the last RDN
    first, no spaces after commas, Java's keywords, other attributes as ``OID=#<DER hex>``."""
    rdns = x509.load_der_x509_certificate(der).subject.rdns
    parts = []
    for rdn in reversed(rdns):
        attrs = []
        for attr in rdn:
            keyword = _KEYWORDS.get(attr.oid)
            if keyword is not None:
                value = attr.value if isinstance(attr.value, str) else bytes(attr.value).decode()
                attrs.append(f"{keyword}={_escape(value)}")
            else:
                attrs.append(f"{attr.oid.dotted_string}={_der_hex(attr)}")
        parts.append("+".join(attrs))
    return ",".join(parts)


def principal_of(ssl_object: ssl.SSLObject | None, mapper: PrincipalMapper) -> str:
    """``User:<mapped DN>`` for a client certificate, else ``User:ANONYMOUS`` (Kafka's principal builder)."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return f"User:{mapper.name(subject_dn(der))}"
