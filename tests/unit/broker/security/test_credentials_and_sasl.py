"""security.credentials and security.sasl: SCRAM as RFC 5802/7677 and Kafka define it; PLAIN users."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from scramp import ScramClient

from ebb_broker.security import credentials
from ebb_broker.security.credentials import (
    CredentialStore,
    Deletion,
    Upsertion,
    credential_from_salted,
    hi,
    parse_add_scram,
)
from ebb_broker.security.sasl import PlainServer, SaslAuthenticationFailed, ScramServer

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def _store(tmp_path: Path, *upserts: Upsertion) -> CredentialStore:
    s = CredentialStore(tmp_path)
    s.apply(list(upserts), [])
    return s


def test_rfc7677_test_vector(tmp_path: Path) -> None:
    """RFC 7677 section 3, byte for byte: user "user", password "pencil"."""
    cred = credential_from_salted("SCRAM-SHA-256", SALT, hi("SCRAM-SHA-256", b"pencil", SALT, 4096), 4096)
    store = _store(tmp_path, Upsertion("user", "SCRAM-SHA-256", cred))
    server = ScramServer("SCRAM-SHA-256", store, nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.user == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_failures_look_the_same(tmp_path: Path, mechanism: str) -> None:
    store = _store(tmp_path, parse_add_scram(f'{mechanism}=[name="a,b",password="p,w"]'))

    def run(user: str, password: str) -> ScramServer:
        client = ScramClient([mechanism], user, password)
        server = ScramServer(mechanism, store)
        client.set_server_first(server.step(client.get_client_first().encode()).decode())
        client.set_server_final(server.step(client.get_client_final().encode()).decode())
        return server

    assert run("a,b", "p,w").user == "a,b"  # saslname escaping (=2C) and a quoted --add-scram value
    failures = []
    for user, password in (("a,b", "wrong"), ("nobody", "p,w")):
        with pytest.raises(SaslAuthenticationFailed) as exc:
            run(user, password)
        failures.append(str(exc.value))
    assert (
        failures[0]
        == failures[1]
        == (
            "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + mechanism
        )
    )


def test_plain_users_are_the_users_given_a_password_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's PLAIN users are its JAAS `user_<name>` entries; a SCRAM-only user is refused PLAIN."""
    store = _store(tmp_path, parse_add_scram("SCRAM-SHA-512=[name=alice,iterations=8192,password=s3cret]"))
    # An AlterUserScramCredentials-made credential carries no password: SCRAM only, as in Kafka.
    salted = hi("SCRAM-SHA-256", b"b0b", SALT, 4096)
    store.apply(
        [Upsertion("bob", "SCRAM-SHA-256", credential_from_salted("SCRAM-SHA-256", SALT, salted, 4096))], []
    )
    # No PBKDF2 per attempt (what let unauthenticated clients burn the broker's CPU): a fast salted hash.
    monkeypatch.setattr("hashlib.pbkdf2_hmac", lambda *a, **k: pytest.fail("PLAIN ran PBKDF2"))
    ok = PlainServer(store)
    assert ok.step(b"\0alice\0s3cret") == b"" and ok.user == "alice"
    assert PlainServer(store).step(b"alice\0alice\0s3cret") == b""
    for bad in (b"\0alice\0nope", b"\0bob\0b0b", b"\0carol\0s3cret", b"carol\0alice\0s3cret", b"\0alice\0"):
        with pytest.raises(SaslAuthenticationFailed, match="Invalid username or password"):
            PlainServer(store).step(bad)
    with pytest.raises(SaslAuthenticationFailed, match="PLAIN expects"):
        PlainServer(store).step(b"garbage")


def test_a_changed_credential_ends_plain_with_the_old_password(tmp_path: Path) -> None:
    """kafka-configs changing alice's SCRAM password: PLAIN must not go on taking the start password."""
    store = _store(
        tmp_path,
        parse_add_scram("SCRAM-SHA-256=[name=alice,password=x]"),
        parse_add_scram("SCRAM-SHA-512=[name=alice,password=x]"),
    )
    salted = hi("SCRAM-SHA-512", b"new", SALT, 4096)
    store.apply(
        [Upsertion("alice", "SCRAM-SHA-512", credential_from_salted("SCRAM-SHA-512", SALT, salted, 4096))], []
    )
    assert store.verify_password("alice", "x")  # SCRAM-SHA-256 still holds the start password
    store.apply([], [Deletion("alice", "SCRAM-SHA-256")])
    assert not store.verify_password("alice", "x")


def test_known_and_unknown_plain_users_cost_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same HMACs for a known user, an unknown one and a SCRAM-only one: the answer's timing tells
    nothing of who exists."""
    store = _store(tmp_path, parse_add_scram("SCRAM-SHA-256=[name=alice,password=s3cret]"))
    salted = hi("SCRAM-SHA-512", b"b0b", SALT, 4096)
    store.apply(
        [Upsertion("bob", "SCRAM-SHA-512", credential_from_salted("SCRAM-SHA-512", SALT, salted, 4096))], []
    )
    calls: list[str] = []
    real = credentials._plain_digest
    monkeypatch.setattr(credentials, "_plain_digest", lambda salt, pw: calls.append(pw) or real(salt, pw))
    work = []
    for user in ("alice", "bob", "mallory"):
        calls.clear()
        store.verify_password(user, "guess")
        work.append(len(calls))
    assert work == [2, 2, 2]


def test_store_persists_privately_and_applies_batches(tmp_path: Path) -> None:
    store = _store(
        tmp_path,
        parse_add_scram("SCRAM-SHA-256=[name=alice,password=x]"),
        parse_add_scram("SCRAM-SHA-512=[name=alice,iterations=16384,password=x]"),
    )
    path = tmp_path / "ebb-scram-credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "x" not in path.read_text().split('"')  # no password, only salts and keys
    store.apply([], [Deletion("alice", "SCRAM-SHA-256")])
    again = CredentialStore(tmp_path)
    assert again.users() == {"alice": {"SCRAM-SHA-512": 16384}}
    assert store.verify_password("alice", "x")
    assert not again.verify_password("alice", "x")  # PLAIN verifiers live in memory: set at each start


@pytest.mark.parametrize(
    "text",
    [
        "SCRAM-SHA-1=[name=a,password=b]",
        "SCRAM-SHA-256=[password=b]",
        "SCRAM-SHA-256=[name=a]",
        "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
        "SCRAM-SHA-256=[name=a,password=b,colour=red]",
    ],
)
def test_bad_add_scram_values(text: str) -> None:
    with pytest.raises(ValueError, match="--add-scram"):
        parse_add_scram(text)
