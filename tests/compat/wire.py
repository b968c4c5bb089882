"""A minimal raw Kafka wire client for tests that must send exact (or broken) frames."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.fetch import FetchRequest

FETCH_VERSION = 12  # the highest ebb-broker serves, the last that names topics (v13+ use topic ids)


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

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def fetch_request(
    topic: str,
    partitions: Sequence[tuple[int, int]],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 10**7,
    partition_max_bytes: int | None = None,
    version: int = FETCH_VERSION,
) -> ApiMessage:
    """A sessionless Fetch of one topic's (partition, offset) pairs, in order, repeats and all."""
    F = FetchRequest[version]
    return F(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            F.FetchTopic(
                topic=topic,
                partitions=[
                    F.FetchTopic.FetchPartition(
                        partition=p,
                        fetch_offset=offset,
                        partition_max_bytes=max_bytes if partition_max_bytes is None else partition_max_bytes,
                        current_leader_epoch=-1,
                        log_start_offset=-1,
                        last_fetched_epoch=-1,
                    )
                    for p, offset in partitions
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
