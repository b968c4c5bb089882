"""The asyncio Kafka server: listeners, connection limits, framing, per-connection order, dispatch.

Kafka processes one request per connection at a time (the socket server mutes a channel until its
response is sent), which is what keeps responses in request order; this server does the same by
serving each connection's frames sequentially. A handler that throttles its client (a client quota,
KIP-219) sets a throttle time: the response goes out at once and the connection's next frame is read
only once that time has passed, as Kafka keeps a throttled channel muted.

No single client can take the broker down or starve the others (Kafka's SocketServer limits, same names):
- `max.connections`: the accept loop waits for a free slot before it accepts (the kernel's backlog holds
  the rest), as Kafka's acceptor does; `max.connections.per.ip` (and `.overrides`) closes a connection
  over its address's quota at once.
- Every frame's size is checked before anything else is read: above `socket.request.max.bytes` (or,
  before a SASL client has authenticated, `sasl.server.max.receive.size`) the connection is closed
  without reading the body. Then the request header's API key and version are read and checked, still
  before the body: an unknown key or version closes the connection (ApiVersions answers any version).
- `queued.max.request.bytes` bounds the request bytes held across all connections; when it is spent a
  connection waits before reading its next body (Kafka mutes the channel), it is never closed for it.
- `connections.max.idle.ms` closes connections on which no whole request was read and no response bytes
  were written for that long, as Kafka's Selector measures idleness (no I/O): a request parked in the
  fetch purgatory and a response the client does not read count as idle (closing frees what they hold),
  a handler at work does not; a client that trickles a frame byte by byte counts as idle too.
A frame that is malformed or a handler that fails closes that connection only, with a log line: other
clients and the stored data are never touched, because decoding happens before any handler runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ebb_broker.log.errors import shown
from ebb_broker.protocol.apis import api_versions
from ebb_broker.protocol.codec import decode_request, fit_error_messages
from ebb_broker.protocol.context import Activity, Broker, RequestContext, Session
from ebb_broker.protocol.encoded import EncodedBody
from ebb_broker.protocol.registry import ApiSpec, lookup
from ebb_broker.protocol.zero_copy import (
    FileRecords,
    Part,
    ZeroCopyResponse,
    close_parts,
    part_length,
    split,
    write_parts,
)
from ebb_broker.security.tls import PrincipalMapper, PrincipalMappingError, principal_of

log = logging.getLogger(__name__)

# Kafka's socket.request.max.bytes default (100 MiB).
MAX_REQUEST_BYTES = 104_857_600
# api_key int16, api_version int16, correlation_id int32: the fixed start of every request header.
_HEADER = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_INT_MAX = 2**31 - 1
# Frames from which decoding runs off the event loop (below it, the thread hop costs more than it saves).
OFF_LOOP_BYTES = 256 * 1024
# ApiVersions, SaslHandshake, SaslAuthenticate: all a SASL connection may send before it authenticated.
_BEFORE_AUTHENTICATION = frozenset({18, 17, 36})


class BadFrameError(Exception):
    """A frame this connection cannot continue after; the connection is closed."""


@dataclass(frozen=True)
class ServerLimits:
    """The server's share of the broker config (see the module docstring for each)."""

    max_request_bytes: int = MAX_REQUEST_BYTES
    max_unauthenticated_bytes: int = 524_288
    queued_max_request_bytes: int = -1
    idle_ms: int = 600_000
    max_connections: int = _INT_MAX
    max_connections_per_ip: int = _INT_MAX
    per_ip_overrides: dict[str, int] = field(default_factory=dict)
    # How long the TLS handshake may take (Kafka bounds it by connections.max.idle.ms too).
    tls_handshake_seconds: float = 10.0


@dataclass
class Listener:
    """One listening endpoint: Kafka's listener name, its security protocol and where it binds."""

    name: str
    security_protocol: str
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None
    principals: PrincipalMapper = field(default_factory=PrincipalMapper)
    sasl_mechanisms: tuple[str, ...] = ()
    sock: socket.socket | None = None

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


class MemoryPool:
    """Kafka's non-strict SimpleMemoryPool for request bytes (queued.max.request.bytes).

    A request is admitted while any capacity is left, even if it is larger than what is left (so a large
    request never waits forever); the balance may go negative and later requests wait until responses
    give bytes back.
    """

    def __init__(self, capacity: int, report: Callable[[int], object] = lambda _available: None) -> None:
        self.capacity = capacity
        self.available = capacity
        self._freed = asyncio.Condition()
        self._report = report  # the available bytes, after each change (a metric)
        report(capacity)

    async def reserve(self, size: int) -> None:
        if self.capacity < 0:
            return
        async with self._freed:
            await self._freed.wait_for(lambda: self.available > 0)
            self.available -= size
            self._report(self.available)

    async def release(self, size: int) -> None:
        if self.capacity < 0:
            return
        async with self._freed:
            self.available += size
            self._report(self.available)
            self._freed.notify_all()


@dataclass(eq=False)
class Connection:
    """One client connection: its stream, its session (principal, listener) and its activity clock."""

    listener: Listener
    session: Session
    writer: asyncio.StreamWriter
    activity: Activity
    task: asyncio.Task[None] | None = None
    # Set by the last request's handler: how long the connection stays muted after its answer (KIP-219).
    throttle_ms: int = 0


class KafkaServer:
    """Accepts connections on every listener and serves each connection's requests in order."""

    def __init__(
        self,
        broker: Broker,
        listeners: list[Listener],
        limits: ServerLimits | None = None,
    ):
        self.broker = broker
        self.listeners = listeners
        self.limits = limits or ServerLimits()
        self._connections: set[Connection] = set()
        self._per_ip: dict[str, int] = {}
        self._slots: asyncio.Semaphore | None = None
        self._pool: MemoryPool | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._live: set[asyncio.Task[None]] = set()  # every connection's task, handshake included

    @property
    def port(self) -> int:
        """The first listener's bound port (what `--port 0` chose)."""
        return self.listeners[0].port

    async def start(self) -> None:
        self._slots = asyncio.Semaphore(self.limits.max_connections)
        self._pool = MemoryPool(
            self.limits.queued_max_request_bytes, self.broker.metrics.request_pool_available.set
        )
        for lst in self.listeners:
            sock = socket.create_server((lst.host, lst.port), backlog=1024)
            sock.setblocking(False)
            lst.sock = sock
            lst.port = sock.getsockname()[1]
        for lst in self.listeners:
            self._tasks.append(asyncio.create_task(self._accept(lst)))
        if self.limits.idle_ms >= 0:
            self._tasks.append(asyncio.create_task(self._close_idle()))

    async def close(self) -> None:
        """Stop accepting, then end every open connection."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for lst in self.listeners:
            if lst.sock is not None:
                lst.sock.close()
        tasks = list(self._live)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- connections ----------------------------------------------------------------------------------------

    def _ip_quota(self, host: str) -> int:
        return self.limits.per_ip_overrides.get(host, self.limits.max_connections_per_ip)

    async def _accept(self, lst: Listener) -> None:
        assert lst.sock is not None and self._slots is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()  # max.connections: wait for a slot, as Kafka's acceptor does
            try:
                sock, addr = await loop.sock_accept(lst.sock)
            except asyncio.CancelledError:
                self._slots.release()
                raise
            except OSError as exc:  # EMFILE and friends: back off instead of spinning
                self._slots.release()
                log.warning("accept on %s failed: %s", lst.name, exc)
                await asyncio.sleep(0.1)
                continue
            host = str(addr[0])
            if self._per_ip.get(host, 0) >= self._ip_quota(host):
                log.info(
                    "closing connection from %s: max.connections.per.ip (%d) reached",
                    host,
                    self._ip_quota(host),
                )
                self.broker.metrics.connections_rejected.labels("max_connections_per_ip").inc()
                sock.close()
                self._slots.release()
                continue
            self._per_ip[host] = self._per_ip.get(host, 0) + 1
            task = asyncio.create_task(self._connection(lst, sock, addr))
            self._live.add(task)
            task.add_done_callback(self._live.discard)

    async def _connection(self, lst: Listener, sock: socket.socket, addr: Any) -> None:
        loop = asyncio.get_running_loop()
        host = str(addr[0])
        metrics = self.broker.metrics
        conn: Connection | None = None
        # Kafka's Acceptor sets TCP_NODELAY on every accepted socket. asyncio sets it only where the
        # socket's proto is IPPROTO_TCP, and socket.create_server's (so accept's) is 0: without it the
        # records a Fetch response sends after its header wait for the client's delayed ACK (40 ms).
        with contextlib.suppress(OSError):  # already reset by the client: the read below ends it
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            reader = asyncio.StreamReader(limit=1 << 20)
            protocol = asyncio.StreamReaderProtocol(reader)
            try:
                transport, _ = await loop.connect_accepted_socket(
                    lambda: protocol,
                    sock,
                    ssl=lst.ssl_context,
                    ssl_handshake_timeout=self.limits.tls_handshake_seconds if lst.ssl_context else None,
                )
            except (OSError, ssl.SSLError, TimeoutError) as exc:
                log.info("closing connection from %s on %s: TLS handshake failed: %s", addr, lst.name, exc)
                metrics.connections_rejected.labels("tls_handshake").inc()
                sock.close()
                return
            writer = asyncio.StreamWriter(transport, protocol, reader, loop)
            session = Session(
                listener=lst.name,
                security_protocol=lst.security_protocol,
                client_host=host,
                authenticated=not lst.sasl,
                sasl_mechanisms=lst.sasl_mechanisms if lst.sasl else (),
            )
            if lst.security_protocol == "SSL":
                # The certificate's DN is the principal on SSL listeners; on SASL_SSL the SASL user is.
                try:
                    session.principal = principal_of(transport.get_extra_info("ssl_object"), lst.principals)
                except PrincipalMappingError as exc:
                    log.info("closing connection from %s on %s: %s", addr, lst.name, exc)
                    metrics.connections_rejected.labels("authentication").inc()
                    writer.close()
                    return
            conn = Connection(lst, session, writer, Activity(loop.time()), asyncio.current_task())
            self._connections.add(conn)
            metrics.connections.inc()
            try:
                await self._serve(conn, reader)
            finally:
                metrics.connections.dec()
                if transport.get_write_buffer_size():
                    # A client that stopped reading (closed as idle, or at shutdown): close() would wait
                    # for it to take the rest first; Kafka closes the channel and drops the response.
                    transport.abort()
                else:
                    writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
        except asyncio.CancelledError:
            pass
        finally:
            if conn is not None:
                self._connections.discard(conn)
            self._per_ip[host] -= 1
            if not self._per_ip[host]:
                del self._per_ip[host]
            assert self._slots is not None
            self._slots.release()

    async def _close_idle(self) -> None:
        """connections.max.idle.ms: Kafka's Selector closes the least recently active idle channels."""
        idle = self.limits.idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(max(idle / 4, 0.05), 10))
            now = loop.time()
            for conn in list(self._connections):
                if not conn.activity.working and now - conn.activity.last > idle and conn.task is not None:
                    log.info(
                        "closing connection from %s: idle for more than connections.max.idle.ms (%d)",
                        conn.session.client_host,
                        self.limits.idle_ms,
                    )
                    self.broker.metrics.connections_rejected.labels("idle").inc()
                    conn.task.cancel()

    # -- requests -------------------------------------------------------------------------------------------

    async def _serve(self, conn: Connection, reader: asyncio.StreamReader) -> None:
        metrics = self.broker.metrics
        peer = conn.writer.get_extra_info("peername")
        assert self._pool is not None
        while True:
            try:
                head = await reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                limit = (
                    self.limits.max_request_bytes
                    if conn.session.authenticated
                    else min(self.limits.max_unauthenticated_bytes, self.limits.max_request_bytes)
                )
                if size < _HEADER.size or size > limit:
                    log.warning(
                        "closing connection from %s: request frame size %d outside [%d, %d]",
                        peer,
                        size,
                        _HEADER.size,
                        limit,
                    )
                    metrics.connections_rejected.labels("frame_size").inc()
                    return
                prefix = await reader.readexactly(_HEADER.size)
            except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                return
            api_key, api_version, correlation_id = _HEADER.unpack(prefix)
            try:
                spec = self._admit(conn, api_key, api_version)
            except BadFrameError as exc:
                log.warning("closing connection from %s: %s", peer, exc)
                metrics.connections_rejected.labels("bad_request").inc()
                return
            await self._pool.reserve(size)
            out: list[Part] | None = None
            try:
                try:
                    try:
                        body = await reader.readexactly(size - _HEADER.size)
                    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                        return
                    conn.activity.touch()
                    conn.activity.working = True
                    metrics.bytes_in.inc(4 + size)
                    try:
                        if spec is None:
                            # Any ApiVersions version is accepted; an unknown one gets a v0 body (KIP-511).
                            out = [api_versions.unsupported_version_response(correlation_id)]
                        else:
                            out = await self._dispatch(conn, spec, prefix + body, api_version, correlation_id)
                    except BadFrameError as exc:
                        log.warning("closing connection from %s: %s", peer, exc)
                        metrics.connections_rejected.labels("bad_request").inc()
                        return
                finally:
                    conn.activity.working = False  # writing: a client that does not read is idle
                    await self._pool.release(size)
                if out is not None:
                    metrics.bytes_out.inc(sum(part_length(p) for p in out))
                    try:
                        await write_parts(conn.writer, out, conn.activity.touch)
                    except (ConnectionError, ssl.SSLError):
                        return
            finally:
                if out is not None:
                    close_parts(out)  # a response never written (the connection closed) holds no file
            if conn.session.close_after_response:
                return
            if conn.throttle_ms:
                # KIP-219: the answer (acks=0: none) went out at once with throttle_time_ms; the channel
                # stays muted for that long, as Kafka's socket server mutes a throttled channel.
                await asyncio.sleep(conn.throttle_ms / 1000)
                conn.throttle_ms = 0

    def _admit(self, conn: Connection, api_key: int, api_version: int) -> ApiSpec | None:
        """Check the header's API key and version before the body is read; None = ApiVersions at a
        version this broker does not know (answered with a v0 body)."""
        if not conn.session.authenticated and api_key not in _BEFORE_AUTHENTICATION:
            # Kafka's SaslServerAuthenticator: until SASL completes, nothing reaches the request handlers.
            raise BadFrameError(f"API key {api_key} before SASL authentication completed")
        spec = lookup(api_key)
        if api_key == api_versions.API_KEY and (
            spec is None or not spec.min_version <= api_version <= spec.max_version
        ):
            return None
        if spec is None:
            raise BadFrameError(f"API key {api_key} is not supported")
        if not spec.min_version <= api_version <= spec.max_version:
            raise BadFrameError(
                f"{spec.name} v{api_version} is not supported (v{spec.min_version}-{spec.max_version})"
            )
        return spec

    async def _dispatch(
        self, conn: Connection, spec: ApiSpec, frame: bytes, api_version: int, correlation_id: int
    ) -> list[Part] | None:
        decode = functools.partial(decode_request, spec.messages.request, frame, api_version)
        try:
            # A large frame (a big produce) is decoded on a worker thread: other clients are served meanwhile.
            request = await asyncio.to_thread(decode) if len(frame) >= OFF_LOOP_BYTES else decode()
        except Exception as exc:  # the codec raises many types on garbage; all mean "malformed"
            raise BadFrameError(f"malformed {spec.name} v{api_version} request: {shown(exc)}") from exc
        header = request.header
        ctx = RequestContext(
            broker=self.broker,
            messages=spec.messages,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=getattr(header, "client_id", None),
            client_host=conn.session.client_host,
            session=conn.session,
            activity=conn.activity,
            request_size=len(frame),
        )
        started = time.perf_counter()
        try:
            response = await spec.handler(ctx, request)
        except BadFrameError:
            raise
        except Exception as exc:
            # A handler bug must not take the broker down; Kafka closes the connection too.
            log.exception("%s v%d handler failed", spec.name, api_version)
            raise BadFrameError(f"{spec.name} handler failed: {shown(exc)}") from exc
        finally:
            self.broker.metrics.observe_request(spec.name, time.perf_counter() - started)
        conn.throttle_ms = ctx.throttle_ms
        if response is None:
            return None
        try:
            return encode_response(response, api_version, correlation_id)
        except Exception as exc:
            log.exception("%s v%d response could not be encoded", spec.name, api_version)
            raise BadFrameError(f"{spec.name} response encoding failed: {shown(exc)}") from exc


def encode_response(response: Any, api_version: int, correlation_id: int) -> list[Part]:
    """Frame a response body with its header (header v1 for flexible versions, v0 otherwise)."""
    if isinstance(response, EncodedBody):
        return [response.framed(correlation_id)]
    files: list[FileRecords] = []
    if isinstance(response, ZeroCopyResponse):
        response, files = response.body, response.files
    try:
        response.with_header(correlation_id=correlation_id)
        # The body was built at `api_version` (ctx.response); passing version= again would make
        # kafka-python try to stamp it into a request header.
        try:
            encoded = bytes(response.encode(header=True, framed=True))
        except struct.error:
            # An error message naming what a client sent can outgrow the int16-prefixed string of a
            # non-flexible version: Kafka's error messages are free text, so it is cut to fit.
            if not fit_error_messages(response, api_version):
                raise
            encoded = bytes(response.encode(header=True, framed=True))
        if not files:
            return [encoded]
        return split(encoded, files, flexible=type(response).flexible_version_q(api_version))
    except BaseException:
        close_parts(list(files))
        raise
