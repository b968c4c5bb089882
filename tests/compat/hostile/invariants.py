"""What must hold after every hostile request, and the limits it is held to: all in this module.

- **Alive and answering.** The broker process runs; a request that does not park (everything but Fetch,
  JoinGroup, SyncGroup and acks=0 Produce) is answered within `answer_seconds`, with a response that
  decodes at the request's version and carries its correlation id.
- **Nobody else waits.** While a hostile request is served, another connection's ApiVersions (sent every
  `ping_interval_seconds`) is answered within `freeze_seconds`.
- **Health.** A real client (librdkafka, a super user on the SASL listener) produces one record to the
  control topic with acks=all, acknowledged within `health_seconds`, and reads it back at the offset
  acknowledged, with the value sent; the control group's committed offset is the one it committed.
- **Acknowledged records intact.** The control log still starts at offset 0 after every step; every
  acknowledged control record is read back, at its offset, after every restart and at the end
  (`Control.verify_all`).
- **Resources.** Resident memory stays within `rss_growth_bytes` of what the broker used after setup;
  open descriptors stay `fd_headroom` below the process's limit (`nofile`) and its sockets within
  `socket_slack` of the connections the harness holds; its threads within `thread_growth` of what it
  ran after setup (its executors are bounded: a thread per request is a leak); one step (request and
  checks) costs the broker at most `step_cpu_seconds` of CPU; with every hostile connection closed the
  broker is idle: at most `idle_cpu_share` of one core over `idle_window_seconds`.
- **No error logged.** The broker logs no ERROR (a handler that raised, a task that died); it closes a
  connection only after a frame above socket.request.max.bytes, a null the schema forbids, a damaged
  frame or what SASL's rules end.
- **Restarts.** SIGTERM exits 0; a start (after SIGTERM or kill -9) succeeds on the same data directory.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from harness.ebb_broker import EbbBroker
from harness.process_usage import ProcessUsage
from tests.compat.clients import Security


@dataclass(frozen=True)
class Limits:
    answer_seconds: float = 30.0
    # How long the harness waits for a request that may park before it moves on (the request stays
    # parked on its connection until that connection is used again).
    park_seconds: float = 0.2
    freeze_seconds: float = 10.0
    ping_interval_seconds: float = 0.02
    health_seconds: float = 20.0
    rss_growth_bytes: int = 512 << 20
    step_cpu_seconds: float = 10.0
    idle_cpu_share: float = 0.3
    idle_window_seconds: float = 0.5
    nofile: int = 1024
    fd_headroom: int = 64
    socket_slack: int = 16
    # The broker's worker pool starts up to min(32, cores + 4) threads as load comes (ThreadPoolExecutor).
    thread_growth: int = 40


class InvariantViolation(AssertionError):
    """One invariant failed; the message says which, what was measured and the limit."""


# -- nobody else waits ------------------------------------------------------------------------------


class Pinger:
    """A thread sending ApiVersions v0 on its own connection, one at a time, recording how long each
    waited; `worst(since)` is the longest wait of the pings sent after `since` (one still unanswered
    counts with its age)."""

    def __init__(self, bootstrap: str, interval: float) -> None:
        self.bootstrap = bootstrap
        self.interval = interval
        self._lock = threading.Lock()
        self._waits: list[tuple[float, float]] = []  # (sent at, waited)
        self._outstanding: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostile-pinger", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> Pinger:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _connect(self) -> socket.socket:
        host, port = self.bootstrap.rsplit(":", 1)
        return socket.create_connection((host, int(port)), timeout=120)

    def _run(self) -> None:
        request = ApiVersionsRequest[0]()
        correlation = 0
        sock: socket.socket | None = None
        while not self._stop.is_set():
            try:
                if sock is None:
                    sock = self._connect()
                correlation += 1
                request.with_header(correlation_id=correlation, client_id="hostile-pinger")
                frame = bytes(request.encode(version=0, header=True, framed=True))
                sent = time.monotonic()
                with self._lock:
                    self._outstanding = sent
                sock.sendall(frame)
                (size,) = struct.unpack(">i", _exact(sock, 4))
                _exact(sock, size)
                with self._lock:
                    self._outstanding = None
                    self._waits.append((sent, time.monotonic() - sent))
                    del self._waits[:-1000]
            except OSError:  # the broker restarting: reconnect (a ping that waited still counts)
                if sock is not None:
                    sock.close()
                sock = None
                with self._lock:
                    self._outstanding = None
                self._stop.wait(0.1)
                continue
            self._stop.wait(self.interval)
        if sock is not None:
            sock.close()

    def pause(self) -> None:
        """Forget the pings so far (a restart, where nobody is answered, is not a freeze)."""
        with self._lock:
            self._waits.clear()
            self._outstanding = None

    def worst(self, since: float) -> float:
        now = time.monotonic()
        with self._lock:
            waits = [w for sent, w in self._waits if sent >= since]
            if self._outstanding is not None:
                waits.append(now - self._outstanding)
        return max(waits, default=0.0)


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return bytes(buf)


# -- no error logged --------------------------------------------------------------------------------

_ERROR = re.compile(r"^\S+ \S+ (ERROR|CRITICAL) ")
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d ")


class LogWatch:
    """Reads what the broker logged since the last look."""

    def __init__(self, broker: EbbBroker) -> None:
        self.broker = broker
        self.offset = broker.log_path.stat().st_size if broker.log_path.exists() else 0

    def new_lines(self) -> list[str]:
        with self.broker.log_path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        # Only whole lines: a line being written is read next time.
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode(errors="replace").splitlines()


def logged_errors(lines: list[str]) -> list[str]:
    """The ERROR records among `lines`, each with its traceback."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if _ERROR.match(line):
            tail = [t for t in lines[i + 1 : i + 40] if not _RECORD.match(t)]
            out.append("\n".join([line, *tail]))
    return out


# -- health and acknowledged records ---------------------------------------------------------------


@dataclass
class Control:
    """The control topic and group, used only by a super user (the hostile principals are denied them):
    one record produced and read back per check; every acknowledged one verified after restarts."""

    bootstrap: str
    security: Security
    topic: str
    group: str
    limits: Limits
    acknowledged: dict[int, bytes] = field(default_factory=dict)
    committed: int | None = None
    sent: int = 0
    _producer: Any = None
    _consumer: Any = None
    _position: int = 0

    def connect(self) -> None:
        self.close()
        conf = {"bootstrap.servers": self.bootstrap, **self.security.confluent()}
        timeout_ms = int(self.limits.health_seconds * 1000)
        self._producer = Producer(
            {
                **conf,
                "acks": "all",
                "linger.ms": 0,
                "message.timeout.ms": timeout_ms,
                "enable.idempotence": False,
            }
        )
        self._consumer = Consumer(
            {
                **conf,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
                "fetch.wait.max.ms": 10,
                "reconnect.backoff.max.ms": 500,
            }
        )
        self._consumer.assign([TopicPartition(self.topic, 0, self._position)])

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        if self._producer is not None:
            self._producer.flush(5)
        self._producer = self._consumer = None

    def probe(self, commit: bool) -> None:
        """Produce one record, read up to it, check every acknowledged record read on the way and the
        control group's committed offset; commit the position when asked."""
        self.sent += 1
        value = f"control-{self.sent}".encode()
        acked: list[Any] = []
        self._producer.produce(
            self.topic, value, partition=0, on_delivery=lambda err, msg: acked.append((err, msg))
        )
        left = self._producer.flush(self.limits.health_seconds)
        if left or not acked:
            raise InvariantViolation(
                f"health: a produce was not acknowledged within {self.limits.health_seconds} s"
            )
        err, msg = acked[0]
        if err is not None:
            raise InvariantViolation(f"health: the control produce failed: {err}")
        self.acknowledged[msg.offset()] = value
        # Nothing may move the control log's start: the tenant is denied DeleteRecords on it, and no
        # retention applies (retention.ms and retention.bytes -1).
        low, _high = self._consumer.get_watermark_offsets(
            TopicPartition(self.topic, 0), timeout=self.limits.health_seconds
        )
        if low != 0:
            raise InvariantViolation(f"acknowledged records deleted: the control log starts at {low}")
        self._read_to(msg.offset() + 1, self._consumer)
        if commit:  # and then OffsetFetch, which answers what the group committed
            self._consumer.commit(offsets=[TopicPartition(self.topic, 0, self._position)], asynchronous=False)
            self.committed = self._position
            self._check_committed()

    def _read_to(self, end: int, consumer: Any) -> None:
        deadline = time.monotonic() + self.limits.health_seconds
        position = consumer.position([TopicPartition(self.topic, 0)])[0].offset
        while position < end:
            if time.monotonic() > deadline:
                raise InvariantViolation(
                    f"health: control records up to offset {end} not read within "
                    f"{self.limits.health_seconds} s (at {position})"
                )
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise InvariantViolation(f"health: reading the control topic failed: {msg.error()}")
            position = msg.offset() + 1
            want = self.acknowledged.get(msg.offset())
            if want is not None and msg.value() != want:
                raise InvariantViolation(
                    f"acknowledged record changed: offset {msg.offset()} holds {msg.value()!r}, "
                    f"acknowledged {want!r}"
                )
        if consumer is self._consumer:
            self._position = position

    def _check_committed(self) -> None:
        try:
            got = self._consumer.committed(
                [TopicPartition(self.topic, 0)], timeout=self.limits.health_seconds
            )
        except KafkaException as exc:
            raise InvariantViolation(f"health: OffsetFetch of the control group failed: {exc}") from exc
        offset = got[0].offset
        want = self.committed if self.committed is not None else -1001  # librdkafka's OFFSET_INVALID
        if offset != want:
            raise InvariantViolation(f"the control group's committed offset is {offset}, it committed {want}")

    def verify_all(self) -> None:
        """Every acknowledged record, read from the log start by a new consumer."""
        if not self.acknowledged:
            return
        conf = {"bootstrap.servers": self.bootstrap, **self.security.confluent()}
        reader = Consumer(
            {
                **conf,
                "group.id": f"{self.group}-verify",
                "enable.auto.commit": False,
                "auto.offset.reset": "error",
            }
        )
        try:
            reader.assign([TopicPartition(self.topic, 0, 0)])
            seen_before = dict(self.acknowledged)
            self._read_to(max(seen_before) + 1, reader)
        finally:
            reader.close()


# -- resources --------------------------------------------------------------------------------------


@dataclass
class Resources:
    """The broker's /proc figures against the limits; `baseline` is taken after setup."""

    broker: EbbBroker
    limits: Limits
    baseline: ProcessUsage | None = None

    def reset(self) -> None:
        self.baseline = self.broker.usage()

    def check(self, *, connections: int, cpu_since: float | None = None) -> ProcessUsage:
        assert self.baseline is not None
        now = self.broker.usage()
        lim = self.limits
        growth = now.rss_bytes - self.baseline.rss_bytes
        if growth > lim.rss_growth_bytes:
            raise InvariantViolation(
                f"resident memory grew by {growth >> 20} MiB (limit {lim.rss_growth_bytes >> 20} MiB)"
            )
        if now.open_files > lim.nofile - lim.fd_headroom:
            raise InvariantViolation(
                f"{now.open_files} open descriptors, less than {lim.fd_headroom} left below the "
                f"limit {lim.nofile}"
            )
        sockets = self.baseline.sockets + connections + lim.socket_slack
        if now.sockets > sockets:
            raise InvariantViolation(
                f"{now.sockets} open sockets with {connections} hostile connections open (limit {sockets})"
            )
        if now.threads > self.baseline.threads + lim.thread_growth:
            raise InvariantViolation(
                f"{now.threads} threads, {self.baseline.threads} after setup (limit +{lim.thread_growth})"
            )
        if cpu_since is not None and now.cpu_seconds - cpu_since > lim.step_cpu_seconds:
            raise InvariantViolation(
                f"one step cost the broker {now.cpu_seconds - cpu_since:.1f} s of CPU "
                f"(limit {lim.step_cpu_seconds} s)"
            )
        return now

    def check_idle(self) -> None:
        time.sleep(0.1)  # the closes just made are handled first
        before = self.broker.usage().cpu_seconds
        time.sleep(self.limits.idle_window_seconds)
        used = self.broker.usage().cpu_seconds - before
        if used > self.limits.idle_cpu_share * self.limits.idle_window_seconds:
            raise InvariantViolation(
                f"with no hostile connection open the broker used {used:.2f} s of CPU in "
                f"{self.limits.idle_window_seconds} s (limit {self.limits.idle_cpu_share:.0%})"
            )
