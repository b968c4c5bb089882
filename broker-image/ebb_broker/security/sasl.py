"""The server side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as Kafka runs them.

A mechanism server takes the client's tokens one SaslAuthenticate at a time (KIP-152) and answers each;
when ``complete`` is set the connection's principal is ``User:<user>``. Every failure raises
``SaslAuthenticationFailed`` carrying the message Kafka sends: SCRAM's is the same for an unknown user and
a wrong password (no user-existence leak), and Kafka's server never answers with an ``e=`` message.

The SCRAM exchange itself (message parsing, nonces, the proof check in constant time, ServerSignature) is
scramp's ``ScramServer``; the credentials come from the CredentialStore. Kafka's specifics kept here:
SCRAM authorization ids are refused unless empty (scramp's rule; Kafka's clients never send one), and
PLAIN's authzid must be empty or equal the user.
"""

from __future__ import annotations

from typing import Protocol

from scramp import ScramException, ScramMechanism

from ebb_broker.security.credentials import MECHANISMS, CredentialStore, ScramCredential

PLAIN = "PLAIN"
SUPPORTED = (PLAIN, *MECHANISMS)


class SaslAuthenticationFailed(Exception):
    """Authentication failed; the message is what the client is told (SASL_AUTHENTICATION_FAILED)."""


class MechanismServer(Protocol):
    mechanism: str
    complete: bool
    user: str | None

    def step(self, token: bytes) -> bytes:
        """Consume the client's token; return the server's answer (may be empty)."""
        ...


class ScramServer:
    """SCRAM-SHA-256/512, two round trips: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, credentials: CredentialStore, *, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.complete = False
        self.user: str | None = None
        self._credentials = credentials
        self._failure = (
            f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
            f"{mechanism}"
        )
        # scramp's server nonce is random unless given (the RFC 7677 test vector fixes it).
        self._server = ScramMechanism(mechanism).make_server(self._lookup, s_nonce=nonce)
        self._round = 0

    def _lookup(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        cred: ScramCredential | None = self._credentials.get(user, self.mechanism)
        if cred is None:
            raise SaslAuthenticationFailed(self._failure)
        self.user = user
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def step(self, token: bytes) -> bytes:
        try:
            message = token.decode()
            if self._round == 0:
                self._round = 1
                self._server.set_client_first(message)
                return str(self._server.get_server_first()).encode()
            if self._round == 1:
                self._round = 2
                self._server.set_client_final(message)
                final = str(self._server.get_server_final())
                self.complete = True
                return final.encode()
        except (ScramException, UnicodeDecodeError, ValueError, KeyError, IndexError):
            pass
        self.user = None
        raise SaslAuthenticationFailed(self._failure)


class PlainServer:
    """PLAIN: one token ``authzid NUL authcid NUL password``, checked against the PLAIN users' verifiers
    (credentials.py: the users whose password the broker was given at start)."""

    mechanism = PLAIN

    def __init__(self, credentials: CredentialStore) -> None:
        self.complete = False
        self.user: str | None = None
        self._credentials = credentials

    def step(self, token: bytes) -> bytes:
        failure = SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        try:
            authzid, user, password = token.decode().split("\0")
        except ValueError:
            raise SaslAuthenticationFailed(
                "Authentication failed: PLAIN expects authzid NUL user NUL password"
            ) from None
        if not user or not password or (authzid and authzid != user):
            raise failure
        if not self._credentials.verify_password(user, password):
            raise failure
        self.user, self.complete = user, True
        return b""


def new_server(mechanism: str, credentials: CredentialStore) -> MechanismServer:
    if mechanism == PLAIN:
        return PlainServer(credentials)
    return ScramServer(mechanism, credentials)
