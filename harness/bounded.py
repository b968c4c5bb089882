"""Bounded waits for client calls that can block in C, where no Python timeout reaches them.

librdkafka's `Consumer.close()` leaves the group and waits for the rebalance to finish inside C; when
the coordinator never answers (or a rebalance callback is stuck) it blocks without a bound, and a
signal-based test timeout cannot interrupt it. `close_within` runs the call on a daemon thread and gives
up after a bound: the test fails with a clear message instead of holding the run (the abandoned thread
dies with the process). `until` polls for an event a test can only observe by asking, within a bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Closeable(Protocol):
    def close(self) -> object: ...


class BlockedCallError(TimeoutError):
    """A client call did not return within its bound (the client is left to die with the process)."""


def close_within(client: Closeable, seconds: float = 20.0, *, what: str = "client") -> None:
    """`client.close()`, or BlockedCallError when it has not returned after `seconds`."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            client.close()
        except BaseException as exc:  # handed to the caller's thread below
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"close-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise BlockedCallError(f"{what}.close() did not return within {seconds:.0f} s (blocked in C?)")
    if errors:
        raise errors[0]


def until(what: str, check: Callable[[], T | None], timeout: float = 30.0, interval: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy, and return that; TimeoutError naming ``what``
    after ``timeout`` seconds (for events a test can only observe by asking: a metric, a file)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"not {what} after {timeout:.0f} s (last: {got!r})")
        time.sleep(interval)
