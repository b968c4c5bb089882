"""The asyncio Kafka server: framing, size limit, per-connection order, dispatch to the registry.

Kafka processes one request per connection at a time (the socket server mutes a channel until its
response is sent), which is what keeps responses in request order; this server does the same by
serving each connection's frames sequentially. A frame that is malformed, oversized or names a
version the registry does not serve closes that connection only, with a log line: other clients
and the stored data are never touched, because decoding happens before any handler runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from typing import Any

from ebb_broker.protocol.apis import api_versions
from ebb_broker.protocol.context import Broker, RequestContext
from ebb_broker.protocol.registry import lookup
from ebb_broker.protocol.zero_copy import (
    FileRecords,
    Part,
    ZeroCopyResponse,
    part_length,
    split,
    write_parts,
)

log = logging.getLogger(__name__)

# Kafka's socket.request.max.bytes default (100 MiB).
MAX_REQUEST_BYTES = 104_857_600
# api_key int16, api_version int16, correlation_id int32: the fixed start of every request header.
_HEADER = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class BadFrameError(Exception):
    """A frame this connection cannot continue after; the connection is closed."""


class KafkaServer:
    """Accepts connections and serves each one's requests in order."""

    def __init__(self, broker: Broker, host: str, port: int, *, max_request_bytes: int = MAX_REQUEST_BYTES):
        self.broker = broker
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=1 << 20)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def close(self) -> None:
        """Stop accepting, then end every open connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        client_host = str(peer[0]) if peer else "?"
        metrics = self.broker.metrics
        metrics.connections.inc()
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _SIZE.unpack(head)
                if size < _HEADER.size or size > self.max_request_bytes:
                    log.warning(
                        "closing connection from %s: request frame size %d outside [%d, %d]",
                        peer,
                        size,
                        _HEADER.size,
                        self.max_request_bytes,
                    )
                    return
                try:
                    frame = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                metrics.bytes_in.inc(4 + size)
                try:
                    out = await self._dispatch(frame, client_host)
                except BadFrameError as exc:
                    log.warning("closing connection from %s: %s", peer, exc)
                    return
                if out is not None:
                    metrics.bytes_out.inc(sum(part_length(p) for p in out))
                    await write_parts(writer, out)
        except asyncio.CancelledError:
            pass
        except ConnectionError:
            pass
        finally:
            metrics.connections.dec()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._connections.discard(task)

    async def _dispatch(self, frame: bytes, client_host: str) -> list[Part] | None:
        api_key, api_version, correlation_id = _HEADER.unpack_from(frame)
        spec = lookup(api_key)
        if api_key == api_versions.API_KEY and (
            spec is None or not spec.min_version <= api_version <= spec.max_version
        ):
            # Any ApiVersions version is accepted; an unknown one gets a v0 body (KIP-511).
            return [api_versions.unsupported_version_response(correlation_id)]
        if spec is None:
            raise BadFrameError(f"API key {api_key} is not supported")
        if not spec.min_version <= api_version <= spec.max_version:
            raise BadFrameError(
                f"{spec.name} v{api_version} is not supported (v{spec.min_version}-{spec.max_version})"
            )
        try:
            request = spec.messages.request.decode(frame, version=api_version, header=True)
        except Exception as exc:  # the codec raises many types on garbage; all mean "malformed"
            raise BadFrameError(f"malformed {spec.name} v{api_version} request: {exc!r}") from exc
        header = request.header
        ctx = RequestContext(
            broker=self.broker,
            spec=spec,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=getattr(header, "client_id", None),
            client_host=client_host,
        )
        started = time.perf_counter()
        try:
            response = await spec.handler(ctx, request)
        except BadFrameError:
            raise
        except Exception as exc:
            # A handler bug must not take the broker down; Kafka closes the connection too.
            log.exception("%s v%d handler failed", spec.name, api_version)
            raise BadFrameError(f"{spec.name} handler failed: {exc!r}") from exc
        finally:
            self.broker.metrics.observe_request(spec.name, time.perf_counter() - started)
        if response is None:
            return None
        try:
            return encode_response(response, api_version, correlation_id)
        except Exception as exc:
            log.exception("%s v%d response could not be encoded", spec.name, api_version)
            raise BadFrameError(f"{spec.name} response encoding failed: {exc!r}") from exc


def encode_response(response: Any, api_version: int, correlation_id: int) -> list[Part]:
    """Frame a response body with its header (header v1 for flexible versions, v0 otherwise)."""
    files: list[FileRecords] = []
    if isinstance(response, ZeroCopyResponse):
        response, files = response.body, response.files
    response.with_header(correlation_id=correlation_id)
    # The body was built at `api_version` (ctx.response); passing version= again would make
    # kafka-python try to stamp it into a request header.
    encoded = bytes(response.encode(header=True, framed=True))
    if not files:
        return [encoded]
    return split(encoded, files, flexible=type(response).flexible_version_q(api_version))
