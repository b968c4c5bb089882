"""SCRAM credentials (RFC 5802 / RFC 7677) kept salted in the data directory, managed as KIP-554 does.

What is stored, per user and mechanism, is what Kafka's ScramCredential holds: the salt, StoredKey,
ServerKey and the iteration count (``ebb-scram-credentials.json``, 0600, written atomically). The password
and the SaltedPassword are never stored: AlterUserScramCredentials sends SaltedPassword = Hi(password,
salt, i), computed by the client, and the broker keeps only ``StoredKey = H(HMAC(SaltedPassword,
"Client Key"))`` and ``ServerKey = HMAC(SaltedPassword, "Server Key")``. Hi is PBKDF2-HMAC with the
mechanism's hash (no SASLprep: Kafka hashes the UTF-8 password as it is).

PLAIN users are the users whose password the broker is given at start (``--add-scram ...password=...``),
as Kafka's PLAIN users are the ``user_<name>`` entries of its static JAAS config: a PLAIN password is
compared with a fast salted hash (HMAC-SHA-256 under a random salt) of that password, kept in memory only.
Kafka's PLAIN never consults SCRAM credentials, and checking a password against one costs a PBKDF2 of
thousands of iterations per attempt, which let unauthenticated clients keep the broker's CPU busy; a user
known only by its SCRAM credential (set with AlterUserScramCredentials, which carries no password) is
refused PLAIN, as in Kafka. A credential changed or deleted later drops that password's PLAIN verifier
(the password may no longer be the user's) until the next start sets it again. Known and unknown users
cost the same: the same number of HMACs, against a random verifier for an unknown user.

``--add-scram 'SCRAM-SHA-256=[name=admin,password=secret]'`` (Kafka's ``kafka-storage format
--add-scram`` syntax, repeatable) sets a credential at start; unlike Kafka's format step it applies at
every start, so the command line (a Kubernetes Secret) stays the source of truth for those users.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ebb_broker.security import store

FILE = "ebb-scram-credentials.json"
FILE_VERSION = 1

# KIP-554's mechanism codes and Kafka's ScramMechanism hash names.
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_BY_CODE = {code: name for name, (code, _hash) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class CredentialError(ValueError):
    """A credential change Kafka refuses; ``code`` is the Kafka error it answers with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# Kafka's error codes for KIP-554 (kept here: this package knows no wire codec).
UNSUPPORTED_SASL_MECHANISM = 33
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93


@dataclass(frozen=True)
class ScramCredential:
    """Kafka's ScramCredential: what the server needs to verify a SCRAM exchange."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def hi(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): PBKDF2-HMAC with the mechanism's hash, output as long as the hash."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password, salt, iterations)


def credential_from_salted(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """StoredKey and ServerKey from SaltedPassword (RFC 5802, section 3)."""
    name = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", name).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def new_salt() -> bytes:
    """Kafka's ScramFormatter.secureRandomBytes: a random salt (UTF-8 of 130 random bits in base 36)."""
    n = int.from_bytes(os.urandom(17), "big") >> 6
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return (out or "0").encode()


def check_iterations(iterations: int) -> None:
    if iterations < MIN_ITERATIONS:
        raise CredentialError(UNACCEPTABLE_CREDENTIAL, f"Too few iterations (minimum {MIN_ITERATIONS})")
    if iterations > MAX_ITERATIONS:
        raise CredentialError(UNACCEPTABLE_CREDENTIAL, f"Too many iterations (maximum {MAX_ITERATIONS})")


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism: str
    credential: ScramCredential
    # The password itself when the broker was given it (--add-scram): it makes the user a PLAIN user too.
    password: str | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class PlainVerifier:
    """A fast salted hash of a password, for PLAIN (the password is never kept)."""

    salt: bytes
    digest: bytes

    @classmethod
    def of(cls, password: str) -> PlainVerifier:
        salt = os.urandom(16)
        return cls(salt, _plain_digest(salt, password))

    def matches(self, password: str) -> bool:
        return hmac.compare_digest(_plain_digest(self.salt, password), self.digest)


def _plain_digest(salt: bytes, password: str) -> bytes:
    return hmac.new(salt, password.encode(), "sha256").digest()


@dataclass(frozen=True)
class Deletion:
    user: str
    mechanism: str


class CredentialStore:
    """Every user's SCRAM credentials; changes are written before they take effect.

    Thread-safety: a lock guards the maps.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, ScramCredential]] = {}
        # PLAIN: user -> mechanism -> the verifier of the password that mechanism's credential was made from.
        self._plain: dict[str, dict[str, PlainVerifier]] = {}
        self._nobody = {
            mech: PlainVerifier.of(base64.b64encode(os.urandom(16)).decode()) for mech in MECHANISMS
        }
        doc = store.read(self.path, FILE_VERSION)
        for user, mechs in (doc or {}).get("users", {}).items():
            self._users[user] = {
                mech: ScramCredential(
                    base64.b64decode(c["salt"]),
                    base64.b64decode(c["stored_key"]),
                    base64.b64decode(c["server_key"]),
                    int(c["iterations"]),
                )
                for mech, c in mechs.items()
                if mech in MECHANISMS
            }

    def _save(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        enc = base64.b64encode
        store.write_private(
            self.path,
            {
                "version": FILE_VERSION,
                "users": {
                    user: {
                        mech: {
                            "salt": enc(c.salt).decode(),
                            "stored_key": enc(c.stored_key).decode(),
                            "server_key": enc(c.server_key).decode(),
                            "iterations": c.iterations,
                        }
                        for mech, c in sorted(mechs.items())
                    }
                    for user, mechs in sorted(users.items())
                    if mechs
                },
            },
        )

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        with self._lock:
            return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, int]]:
        """user -> {mechanism: iterations}, for DescribeUserScramCredentials."""
        with self._lock:
            return {
                u: {m: c.iterations for m, c in mechs.items()} for u, mechs in self._users.items() if mechs
            }

    def apply(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        """Apply the changes together: written to disk first, then visible (KIP-554's atomic batch)."""
        upsertions, deletions = list(upsertions), list(deletions)
        with self._lock:
            users = {u: dict(m) for u, m in self._users.items()}
            for d in deletions:
                users.get(d.user, {}).pop(d.mechanism, None)
            for u in upsertions:
                users.setdefault(u.user, {})[u.mechanism] = u.credential
            users = {u: m for u, m in users.items() if m}
            self._save(users)
            self._users = users
            # A changed credential may no longer be the password its PLAIN verifier was made from.
            changed = [(d.user, d.mechanism) for d in deletions] + [(u.user, u.mechanism) for u in upsertions]
            for user, mechanism in changed:
                self._plain.get(user, {}).pop(mechanism, None)
            for u in upsertions:
                if u.password is not None:
                    self._plain.setdefault(u.user, {})[u.mechanism] = PlainVerifier.of(u.password)
            self._plain = {u: v for u, v in self._plain.items() if v}

    def verify_password(self, user: str, password: str) -> bool:
        """Whether ``password`` is a PLAIN user's (see the module docstring): the same work, one HMAC per
        mechanism, for every user, known or not."""
        with self._lock:
            verifiers = self._plain.get(user, {})
        matched = False
        for mech, nobody in self._nobody.items():
            verifier = verifiers.get(mech)
            matched |= (verifier or nobody).matches(password) and verifier is not None
        return matched


# Kafka's ScramParser: MECHANISM=[key=value,...], values optionally in double quotes.
_ADD_SCRAM = re.compile(r"\s*(?P<mech>[A-Z0-9-]+)\s*=\s*\[(?P<body>.*)\]\s*")
_PAIR = re.compile(r'\s*([a-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


def parse_add_scram(text: str) -> Upsertion:
    """One ``--add-scram`` value (``SCRAM-SHA-256=[name=alice,password=secret]``, or with
    ``salt``+``saltedpassword`` in base64, ``iterations`` default 4096); raises ValueError."""
    m = _ADD_SCRAM.fullmatch(text)
    if m is None or m["mech"] not in MECHANISMS:
        raise ValueError(
            f"--add-scram {text!r}: expected SCRAM-SHA-256=[name=...,password=...] (or SCRAM-SHA-512)"
        )
    mechanism, body, pos, fields = m["mech"], m["body"], 0, {}
    while pos < len(body):
        pm = _PAIR.match(body, pos)
        if pm is None or pm.end() == pos:
            raise ValueError(f"--add-scram {text!r}: cannot parse {body[pos:]!r}")
        value = pm[2]
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        fields[pm[1]] = value
        pos = pm.end()
    unknown = set(fields) - {"name", "password", "salt", "saltedpassword", "iterations"}
    if unknown:
        raise ValueError(f"--add-scram {text!r}: unknown keys {sorted(unknown)}")
    if not fields.get("name"):
        raise ValueError(f"--add-scram {text!r}: name is required")
    iterations = int(fields.get("iterations", MIN_ITERATIONS))
    try:
        check_iterations(iterations)
    except CredentialError as exc:
        raise ValueError(f"--add-scram {text!r}: {exc}") from None
    if "password" in fields:
        if "salt" in fields or "saltedpassword" in fields:
            raise ValueError(f"--add-scram {text!r}: give password or salt+saltedpassword, not both")
        salt = new_salt()
        salted = hi(mechanism, fields["password"].encode(), salt, iterations)
    elif "salt" in fields and "saltedpassword" in fields:
        salt, salted = base64.b64decode(fields["salt"]), base64.b64decode(fields["saltedpassword"])
    else:
        raise ValueError(f"--add-scram {text!r}: password (or salt and saltedpassword) is required")
    credential = credential_from_salted(mechanism, salt, salted, iterations)
    return Upsertion(fields["name"], mechanism, credential, fields.get("password"))
