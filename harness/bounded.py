"""Bounded waits for client calls that can block in C, where no Python timeout reaches them.

librdkafka's `Consumer.close()` leaves the group and waits for the rebalance to finish inside C; when
the coordinator never answers (or a rebalance callback is stuck) it blocks without a bound, and a
signal-based test timeout cannot interrupt it. `close_within` runs the call on a daemon thread and gives
up after a bound: the test fails with a clear message instead of holding the run (the abandoned thread
dies with the process).

`until` is every other bounded wait: it polls for what a test (or the harness) can only observe by
asking, and fails naming it. Where something can be told (a thread ends, a callback fires), wait on an
Event instead; never sleep for ordering.
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


def until(
    what: str,
    check: Callable[[], T | None],
    timeout: float = 30.0,
    interval: float = 0.05,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Poll ``check`` until it returns something truthy, and return that: the one bounded wait of the
    tests and the harness, for what they can only observe by asking (a metric, a file, a port, a topic's
    leader). ``ignore``: exceptions ``check`` may raise meanwhile, meaning "not yet" (a broker still
    starting). After ``timeout`` seconds, TimeoutError naming ``what`` and the last value or error seen.
    ``interval`` 0 suits a ``check`` that itself blocks for a while (a consumer's poll). ``clock`` and
    ``sleep`` are the real ones except in the helper's own tests."""
    deadline = clock() + timeout
    while True:
        error: BaseException | None = None
        got: T | None = None
        try:
            got = check()
        except ignore as exc:
            error = exc
        if got:
            return got
        if clock() > deadline:
            last = f"{type(error).__name__}: {error}" if error is not None else repr(got)
            raise TimeoutError(f"not {what} after {timeout:g} s (last: {last})") from error
        sleep(interval)
