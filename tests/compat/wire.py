"""A minimal raw Kafka wire client for tests that must send exact (or broken) frames."""

from __future__ import annotations

import socket
import struct

from kafka.protocol.api_message import ApiMessage


class Wire:
    def __init__(self, bootstrap: str, timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, request: ApiMessage, version: int, correlation_id: int | None = None) -> bytes:
        if correlation_id is None:
            self.correlation += 1
            correlation_id = self.correlation
        request.with_header(correlation_id=correlation_id, client_id="wire-test")
        return bytes(request.encode(version=version, header=True, framed=True))

    def recv_frame(self) -> bytes:
        head = self._exact(4)
        (size,) = struct.unpack(">i", head)
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()
