"""The hostile client as a Hypothesis state machine against one real ebb-broker process.

A step sends one drawn request on one of a few connections (three PLAINTEXT ones as `User:ANONYMOUS`, one
SASL_PLAINTEXT one that may authenticate as `User:mallory`), sends a damaged frame on a new connection,
closes a connection, authenticates, or restarts the broker (SIGTERM or kill -9); after every step the
invariants of `invariants.py` are checked. Values the broker answers with (member ids, generations,
producer ids, topic ids, offsets) feed later requests of the same sequence. A failing sequence is
shrunk by Hypothesis to the fewest, smallest requests that still fail, and printed.

The hostile principals are tenants, not operators: ACLs give `User:*` every right on every topic, group
and transactional id (internal topics included) and DESCRIBE and IDEMPOTENT_WRITE on the cluster, and
deny them the control topic and group; `User:admin`, a super user, runs the health checks.
"""

from __future__ import annotations

import contextlib
import random
import select
import shutil
import socket
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest

from ebb_broker.protocol.codec import messages_for
from harness.ebb_broker import EbbBroker
from tests.compat.clients import Security
from tests.compat.conftest import FAST_BROKER, scram_authenticate
from tests.compat.hostile.invariants import (
    Control,
    InvariantViolation,
    Limits,
    LogWatch,
    Pinger,
    Resources,
    logged_errors,
)
from tests.compat.hostile.requests import (
    HARVESTED,
    HostileRequest,
    Mutation,
    Names,
    Scale,
    Seen,
    mutations,
    requests,
)
from tests.compat.wire import Wire

CONTROL_TOPIC = "hostile-control"
CONTROL_GROUP = "hostile-control-group"
ADMIN = ("admin", "admin-secret")
MALLORY = ("mallory", "mallory-secret")
NAMES = Names(
    topics=("fuzz-a", "fuzz-b", "fuzz-compact"),
    groups=("fuzz-g", "fuzz-h"),
    transactional_ids=("fuzz-tx", "fuzz-ty"),
    forbidden=(CONTROL_TOPIC, CONTROL_GROUP),
    sasl_tokens=(
        f"\0{MALLORY[0]}\0{MALLORY[1]}".encode(),
        f"\0{MALLORY[0]}\0wrong".encode(),
        f"\0{ADMIN[0]}\0wrong".encode(),
        b"n,,n=mallory,r=fyko+d2lbbFgONRv9qkxdawL",
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLabc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgs",
    ),
)
BROKER_CONFIGS = {
    **FAST_BROKER,
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": f"User:{ADMIN[0]}",
    # Hostile creations spend this budget, not the machine's disk: every partition is a directory.
    "max.partitions": "1000",
}
MAX_REQUEST_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default
SASL_SLOT = 3  # slots 0-2 are PLAINTEXT connections
SLOTS = 4
# APIs whose answer may legitimately wait: a Fetch in the purgatory, a JoinGroup or SyncGroup waiting for
# the rest of the group (and a Produce with acks=0, which gets no answer at all).
PRODUCE, FETCH, JOIN_GROUP, SYNC_GROUP, SASL_HANDSHAKE, SASL_AUTHENTICATE = 0, 1, 11, 14, 17, 36
MAY_PARK = {FETCH, JOIN_GROUP, SYNC_GROUP}
FALLBACK: dict[str, Any] = {
    "topic_id": uuid.UUID(int=0),
    "member_id": "",
    "generation_id": -1,
    "producer_id": -1,
    "producer_epoch": -1,
    "offset": 0,
}


@dataclass
class Budget:
    """How much hostile traffic one run sends (docs/broker.md, "Hostile clients")."""

    examples: int
    steps_per_example: int = 50
    # A step restarts the broker about once in `restart_odds` draws of the restart rule.
    restart_odds: int = 48
    scale: Scale = field(default_factory=Scale)


@dataclass
class Stats:
    requests: int = 0
    damaged: int = 0
    unanswered_parked: int = 0
    closed_by_broker: int = 0
    restarts: int = 0
    examples: int = 0
    by_api: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        top = ", ".join(f"{k} {v}" for k, v in sorted(self.by_api.items()))
        return (
            f"{self.requests} requests ({self.damaged} damaged frames) in {self.examples} sequences, "
            f"{self.restarts} restarts, {time.monotonic() - self.started:.0f} s; "
            f"{self.closed_by_broker} connections closed by the broker, {self.unanswered_parked} parked; "
            f"by API: {top}"
        )


class Fuzzing:
    """What every sequence shares: one broker and its control topic, the watchers, the statistics."""

    def __init__(self, root: Path, limits: Limits) -> None:
        self.root = root
        self.limits = limits
        self.stats = Stats()
        self.generation = 0
        self.broker: EbbBroker
        self.control: Control
        self.pinger: Pinger
        self.logs: LogWatch
        self.resources: Resources
        self.apis: dict[int, tuple[int, int]] = {}
        self._fresh()

    # -- the broker -------------------------------------------------------------------------------

    def _fresh(self) -> None:
        """A broker on a new data directory, set up."""
        self.generation += 1
        self.broker = EbbBroker(
            self.root / f"data-{self.generation}",
            configs=BROKER_CONFIGS,
            log_dir=self.root,
            nofile=self.limits.nofile,
            add_scram=[
                f"{mech}=[name={user},password={pw}]"
                for user, pw in (ADMIN, MALLORY)
                for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
            ],
        ).start()
        try:
            self._set_up()
        except BaseException:
            self.broker.kill()  # a setup that failed leaves no broker behind
            raise

    def _set_up(self) -> None:
        """The control topic, the hostile topics, the ACLs, the watchers and a first health check."""
        self.logs = LogWatch(self.broker)
        admin = AdminClient({"bootstrap.servers": self.sasl_bootstrap, **self.admin_security.confluent()})
        topics = [
            NewTopic(CONTROL_TOPIC, 1, 1, config={"retention.ms": "-1", "retention.bytes": "-1"}),
            NewTopic("fuzz-a", 3, 1),
            NewTopic("fuzz-b", 1, 1),
            NewTopic("fuzz-compact", 2, 1, config={"cleanup.policy": "compact"}),
        ]
        for fut in admin.create_topics(topics).values():
            fut.result(30)
        anyone, pattern = "User:*", ResourcePatternType.LITERAL
        allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
        acls = [
            AclBinding(rt, "*", pattern, anyone, "*", AclOperation.ALL, allow)
            for rt in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
        ]
        acls += [
            AclBinding(ResourceType.BROKER, "kafka-cluster", pattern, anyone, "*", op, allow)
            for op in (AclOperation.DESCRIBE, AclOperation.IDEMPOTENT_WRITE, AclOperation.DESCRIBE_CONFIGS)
        ]
        acls += [
            AclBinding(ResourceType.TOPIC, CONTROL_TOPIC, pattern, anyone, "*", AclOperation.ALL, deny),
            AclBinding(ResourceType.GROUP, CONTROL_GROUP, pattern, anyone, "*", AclOperation.ALL, deny),
        ]
        for fut in admin.create_acls(acls).values():
            fut.result(30)
        self.apis = advertised(self.broker.bootstrap)
        self.control = Control(
            self.sasl_bootstrap, self.admin_security, CONTROL_TOPIC, CONTROL_GROUP, self.limits
        )
        self.control.connect()
        self.control.probe(commit=True)
        self.pinger = Pinger(self.broker.bootstrap, self.limits.ping_interval_seconds).start()
        self.resources = Resources(self.broker, self.limits)
        self.resources.reset()

    @property
    def sasl_bootstrap(self) -> str:
        return self.broker.bootstrap_of("SASL_PLAINTEXT")

    @property
    def admin_security(self) -> Security:
        return Security("SASL_PLAINTEXT", "SCRAM-SHA-512", *ADMIN)

    def restart(self, *, kill: bool) -> None:
        """Restart on the same data directory: SIGTERM must exit 0, the start must succeed, and every
        acknowledged control record must be read back."""
        self.stats.restarts += 1
        self.control.close()
        if kill:
            self.broker.kill()
        else:
            code = self.broker.stop()
            if code != 0:
                raise InvariantViolation(f"restart: SIGTERM exited {code}\n{self.log_tail()}")
        try:
            self.broker.restart()
        except Exception as exc:
            raise InvariantViolation(f"restart: the broker did not start again: {exc}") from exc
        self.pinger.pause()
        self.control.connect()
        self.control.verify_all()
        self.resources.reset()

    def healthy(self) -> bool:
        if not self.broker.alive():
            return False
        try:
            self.control.probe(commit=False)
        except InvariantViolation:
            return False
        return True

    def recover(self) -> None:
        """After a failure that left the broker down or unhealthy: a new broker on a new data directory
        (the old one is kept beside it for a post-mortem), so the next sequence starts clean."""
        self.close()
        self._fresh()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.broker.log_path.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        self.pinger.stop()
        self.control.close()
        if self.broker.alive():
            self.broker.kill()

    def remove(self) -> None:
        """The data directories of every broker this run started (left in place when a run failed)."""
        for d in self.root.glob("data-*"):
            shutil.rmtree(d, ignore_errors=True)


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version, as the broker's ApiVersions answers."""
    w = Wire(bootstrap)
    try:
        w.send_raw(
            w.frame(ApiVersionsRequest[3](client_software_name="hostile", client_software_version="1"), 3)
        )
        response = ApiVersionsResponse.decode(w.recv_frame(), version=3, header=True)
    finally:
        w.close()
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


# -- connections ------------------------------------------------------------------------------------


@dataclass
class Slot:
    """One hostile connection: its listener, whether it authenticated, and a request it left parked."""

    wire: Wire
    sasl: bool
    authenticated: bool
    pending: HostileRequest | None = None
    pending_correlation: int = 0

    def readable(self, seconds: float) -> bool:
        ready, _, _ = select.select([self.wire.sock], [], [], seconds)
        return bool(ready)


class Closed(Exception):
    """The broker closed the connection."""


def harvest(message: Any, version: int, into: dict[str, list[Any]]) -> None:
    """Collect the values of HARVESTED fields anywhere in a decoded response."""
    struct = type(message)._struct
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        value = getattr(message, f.name, None)
        if value is None:
            continue
        if f.is_struct_array():
            for item in value[:50]:
                harvest(item, version, into)
        elif f.is_struct():
            harvest(value, version, into)
        elif f.name in HARVESTED and not f.is_array():
            pool = into.setdefault(HARVESTED[f.name], [])
            if value not in pool[-8:]:
                pool.append(value)
                del pool[:-16]


def machine(fuzzing: Fuzzing, budget: Budget) -> Callable[[], RuleBasedStateMachine]:
    """The state machine class of one run (its strategies need the broker's advertised APIs)."""
    limits = fuzzing.limits
    drawn = requests(fuzzing.apis, NAMES, budget.scale)
    # One request in four is sent damaged (shrinking goes towards undamaged).
    damages = st.integers(0, 3).flatmap(lambda k: mutations() if k == 3 else st.none())

    class HostileClients(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            fuzzing.stats.examples += 1
            if not fuzzing.healthy():
                fuzzing.recover()
            self.slots: dict[int, Slot] = {}
            self.seen: dict[str, list[Any]] = {}
            self.probes = 0
            self.restarted = False
            self.acted = False  # whether the step did anything the invariants must look at
            self.step_start = time.monotonic()
            self.cpu_start = fuzzing.broker.usage().cpu_seconds
            fuzzing.logs.new_lines()  # what an earlier sequence left is not this one's

        # -- rules -----------------------------------------------------------------------------------

        @rule(slot=st.integers(0, SLOTS - 1), request=drawn, damage=damages)
        def send(self, slot: int, request: HostileRequest, damage: Mutation | None) -> None:
            """One request on the slot's connection, or (with `damage`) its frame damaged, on a new
            connection of the slot's listener."""
            self._begin()
            if damage is not None:
                self._send_damaged(slot, request.damaged(damage))
                return
            conn = self._slot(slot)
            fuzzing.stats.requests += 1
            fuzzing.stats.by_api[request.name] += 1
            conn.wire.correlation += 1
            correlation = conn.wire.correlation
            frame = request.frame(correlation, self._resolve)
            try:
                conn.wire.sock.settimeout(limits.answer_seconds)
                conn.wire.send_raw(frame)
                if request.api_key == PRODUCE and request.body.get("acks") == 0:
                    return
                if request.api_key in MAY_PARK and not conn.readable(limits.park_seconds):
                    conn.pending, conn.pending_correlation = request, correlation
                    return
                response = conn.wire.recv_frame()
            except TimeoutError:
                raise InvariantViolation(
                    f"not answered within {limits.answer_seconds} s: {request!r}"
                ) from None
            except (ConnectionError, BrokenPipeError):
                self._closed(slot, request, len(frame))
                return
            self._check_response(conn, request, correlation, response)

        def _send_damaged(self, slot: int, request: HostileRequest) -> None:
            """A damaged frame, on a new connection that is closed after it: any answer, a close, or
            nothing are all allowed; the invariants are not."""
            fuzzing.stats.requests += 1
            fuzzing.stats.damaged += 1
            bootstrap = fuzzing.sasl_bootstrap if slot == SASL_SLOT else fuzzing.broker.bootstrap
            host, port = bootstrap.rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=limits.answer_seconds)
            try:
                try:
                    s.sendall(request.frame(1, self._resolve))
                    s.shutdown(socket.SHUT_WR)
                except TimeoutError:
                    raise InvariantViolation(
                        f"a damaged frame not read within {limits.answer_seconds} s"
                    ) from None
                except OSError:  # the broker closed the connection while it was being sent: allowed
                    return
                s.settimeout(limits.park_seconds)
                with contextlib.suppress(OSError):  # an answer, a close, or nothing in time: all allowed
                    while s.recv(1 << 16):
                        pass
            finally:
                s.close()

        @rule(
            slot=st.integers(0, SLOTS - 1),
            login=st.sampled_from([None, "SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]),
        )
        def reconnect(self, slot: int, login: str | None) -> None:
            """Close the slot's connection; with `login`, open the SASL slot again with a correct login as
            mallory (what hostile requests then do there, they do as an authenticated tenant)."""
            self._begin()
            if slot in self.slots:
                self.slots.pop(slot).wire.close()
            if login is None or slot != SASL_SLOT:
                return
            w = Wire(fuzzing.sasl_bootstrap, timeout=limits.answer_seconds)
            if login == "PLAIN":
                w.send_raw(w.frame(SaslHandshakeRequest[1](mechanism="PLAIN"), 1))
                w.recv_frame()
                token = f"\0{MALLORY[0]}\0{MALLORY[1]}".encode()
                w.send_raw(w.frame(SaslAuthenticateRequest[2](auth_bytes=token), 2))
                result = SaslAuthenticateResponse.decode(w.recv_frame(), version=2, header=True)
            else:
                result = scram_authenticate(w, *MALLORY, mechanism=login)
            if result.error_code:
                w.close()
                raise InvariantViolation(f"a correct {login} login as mallory failed: {result}")
            self.slots[SASL_SLOT] = Slot(w, sasl=True, authenticated=True)

        @precondition(lambda self: budget.restart_odds > 0 and not self.restarted)
        @rule(now=st.integers(0, max(budget.restart_odds - 1, 0)), kill=st.booleans())
        def restart(self, now: int, kill: bool) -> None:
            """Restart the broker, SIGTERM or kill -9, about once in restart_odds draws and at most once
            per sequence: when `now` is the middle value (Hypothesis favours a range's bounds, so the
            highest would come up far more often; shrinking goes to 0, no restart)."""
            if now != budget.restart_odds // 2:
                return
            self._begin()
            self.restarted = True
            for s in self.slots.values():
                s.wire.close()
            self.slots.clear()
            fuzzing.restart(kill=kill)
            self.cpu_start = fuzzing.broker.usage().cpu_seconds

        # -- invariants --------------------------------------------------------------------------------

        @invariant()
        def broker_is_well(self) -> None:
            f = fuzzing
            if not f.broker.alive():
                code = f.broker.proc.returncode if f.broker.proc else "?"
                raise InvariantViolation(f"the broker exited ({code})\n{f.log_tail()}")
            if not self.acted:  # a restart draw that restarted nothing: nothing to look at
                return
            self.acted = False
            worst = f.pinger.worst(self.step_start)
            if worst > limits.freeze_seconds:
                # The broker's CPU time tells a busy event loop from a starved or blocked process.
                cpu = f.broker.usage().cpu_seconds - self.cpu_start
                raise InvariantViolation(
                    f"another connection waited {worst:.1f} s for an ApiVersions answer (limit "
                    f"{limits.freeze_seconds} s; the broker used {cpu:.1f} s of CPU in the step)"
                )
            self.probes += 1
            f.control.probe(commit=self.probes % 10 == 0)
            f.resources.check(connections=len(self.slots), cpu_since=self.cpu_start)
            errors = logged_errors(f.logs.new_lines())
            if errors:
                raise InvariantViolation("the broker logged:\n" + "\n".join(errors))

        def teardown(self) -> None:
            for s in self.slots.values():
                s.wire.close()
            self.slots.clear()
            if fuzzing.broker.alive():
                fuzzing.resources.check_idle()

        # -- helpers -----------------------------------------------------------------------------------

        def _begin(self) -> None:
            self.acted = True
            self.step_start = time.monotonic()
            self.cpu_start = fuzzing.broker.usage().cpu_seconds

        def _slot(self, slot: int) -> Slot:
            conn = self.slots.get(slot)
            if conn is not None and conn.pending is not None:
                # A parked request: its answer, if it came, is checked; else the connection is dropped.
                if conn.readable(limits.park_seconds):
                    try:
                        self._check_response(
                            conn, conn.pending, conn.pending_correlation, conn.wire.recv_frame()
                        )
                    except ConnectionError:
                        conn.wire.close()
                        conn = None
                else:
                    fuzzing.stats.unanswered_parked += 1
                    conn.wire.close()
                    conn = None
                if conn is not None:
                    conn.pending = None
            if conn is None:
                sasl = slot == SASL_SLOT
                w = Wire(
                    fuzzing.sasl_bootstrap if sasl else fuzzing.broker.bootstrap,
                    timeout=limits.answer_seconds,
                )
                conn = self.slots[slot] = Slot(w, sasl=sasl, authenticated=not sasl)
            return conn

        def _resolve(self, placeholder: Seen) -> Any:
            pool = self.seen.get(placeholder.pool)
            if not pool:
                return FALLBACK[placeholder.pool]
            return pool[-1 - placeholder.pick % len(pool)]

        def _closed(self, slot: int, request: HostileRequest, size: int) -> None:
            """The broker closed the connection: only a frame above socket.request.max.bytes, a null the
            schema forbids (Kafka closes the connection on a request it cannot parse) and SASL's rules
            (before authentication, a failed or repeated handshake) allow that."""
            conn = self.slots.pop(slot)
            conn.wire.close()
            fuzzing.stats.closed_by_broker += 1
            if size - 4 > MAX_REQUEST_BYTES or request.forbidden_null:
                return
            if conn.sasl and (
                not conn.authenticated or request.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE)
            ):
                return
            if request.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                return
            raise InvariantViolation(f"the broker closed the connection after a well-formed {request!r}")

        def _check_response(
            self, conn: Slot, request: HostileRequest, correlation: int, frame: bytes
        ) -> None:
            cls = messages_for(request.api_key).response
            try:
                response = cls.decode(frame, version=request.version, header=True)
            except Exception as exc:
                raise InvariantViolation(
                    f"the answer to {request!r} does not decode as {cls.name} v{request.version}: {exc!r}"
                ) from exc
            if response.header.correlation_id != correlation:
                raise InvariantViolation(
                    f"the answer to {request!r} carries correlation id "
                    f"{response.header.correlation_id}, not {correlation}"
                )
            harvest(response, request.version, self.seen)
            if request.api_key == SASL_AUTHENTICATE and conn.sasl and response.error_code == 0:
                token = bytes(response.auth_bytes or b"")
                conn.authenticated = conn.authenticated or not token or token.startswith(b"v=")

    return HostileClients


def run(
    fuzzing: Fuzzing,
    budget: Budget,
    *,
    seed: int | None = None,
    derandomize: bool = False,
    shrink: bool = True,
) -> None:
    """One batch of `budget.examples` sequences; a failing one is printed (shrunk first when `shrink`:
    every shrink step replays a sequence against the broker, up to Hypothesis's 5 minutes) and raised."""
    factory = machine(fuzzing, budget)
    phases = [hypothesis.Phase.explicit, hypothesis.Phase.generate]
    if shrink:
        phases.append(hypothesis.Phase.shrink)
    if seed is not None:
        hypothesis.seed(seed)(factory)
    run_state_machine_as_test(
        factory,  # type: ignore[arg-type]  # any callable returning a machine, as Hypothesis documents
        settings=hypothesis.settings(
            max_examples=budget.examples,
            stateful_step_count=budget.steps_per_example,
            derandomize=derandomize,
            phases=phases,
            database=None,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            print_blob=True,
        ),
    )


def run_for(fuzzing: Fuzzing, budget: Budget, seconds: float, seed: int | None = None) -> list[str]:
    """Batches with fresh random seeds (printed) until `seconds` have passed, or the one batch of `seed`;
    each failure is kept (with its shrunk sequence) and the next batch starts on a new broker."""
    findings: list[str] = []
    deadline = time.monotonic() + seconds
    while True:
        batch_seed = seed if seed is not None else random.randrange(2**32)
        print(
            f"hostile clients: batch seed {batch_seed} (reproduce: make fuzz-broker FUZZ_SEED={batch_seed})"
        )
        try:
            run(fuzzing, budget, seed=batch_seed)
        except Exception as exc:
            findings.append(f"seed {batch_seed}:\n" + "".join(traceback.format_exception(exc)))
            print(findings[-1])
            fuzzing.recover()
        print(f"hostile clients: {fuzzing.stats.summary()}")
        if seed is not None or time.monotonic() > deadline:
            return findings
