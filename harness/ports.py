"""Free TCP ports for the processes the harness starts (the kernel picks them; nothing is hard-coded)."""

from __future__ import annotations

import contextlib
import socket


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Distinct free ports on `host`, all bound together so they differ, then released for a server."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]


def free_port(host: str = "127.0.0.1") -> int:
    """One free port on `host`."""
    return free_ports(1, host)[0]
