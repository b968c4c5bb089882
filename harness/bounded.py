"""Bounded waits: for a condition a test polls, and for client calls that can block in C.

`wait_until` is the one polling wait of the tests and the harness, for what they cannot be told about
(an object's status, a broker's metric, a port, a process gone): it polls and fails with what it waited
for, and the last thing it saw (a value, or an error that meant "not yet"), once its bound has passed.
`until` is the same wait with a default bound and a short interval. Where something can be told (a
thread ends, a callback fires), wait on an Event instead; never sleep for ordering.

librdkafka's `Consumer.close()` leaves the group and waits for the rebalance to finish inside C; when
the coordinator never answers (or a rebalance callback is stuck) it blocks without a bound, and a
signal-based test timeout cannot interrupt it. `close_within` runs the call on a daemon thread and gives
up after a bound: the test fails with a clear message instead of holding the run (the abandoned thread
dies with the process).
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


class WaitTimeout(TimeoutError, AssertionError):
    """A condition waited for did not come within its bound: an assertion for a test (it fails), a
    TimeoutError for the harness code that gives up or tries another way."""


def wait_until(
    what: str,
    check: Callable[[], T],
    timeout: float,
    *,
    until: Callable[[T], object] = bool,
    interval: float = 0.2,
    ignore: tuple[type[BaseException], ...] = (),
    detail: Callable[[T], object] = repr,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Call `check` every `interval` seconds until `until` holds for what it returns (by default: until
    it returns a true value), and return that value.

    `ignore`: exceptions `check` may raise meanwhile, meaning "not yet" (a broker still starting).
    `interval` 0 suits a `check` that itself blocks for a while (a consumer's poll). After `timeout`
    seconds, WaitTimeout says `what` was waited for and shows the last value `check` returned, through
    `detail` (an object's YAML, say), or the last error it raised. `clock` and `sleep` are the real ones
    except in the helper's own tests."""
    deadline = clock() + timeout
    while True:
        error: BaseException | None = None
        try:
            last = check()
        except ignore as exc:
            error = exc
        else:
            if until(last):
                return last
        if clock() >= deadline:
            seen = f"{type(error).__name__}: {error}" if error is not None else detail(last)
            raise WaitTimeout(f"{what}: not within {timeout:g} s; last seen: {seen}") from error
        sleep(interval)


def until(
    what: str,
    check: Callable[[], T | None],
    timeout: float = 30.0,
    interval: float = 0.05,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    detail: Callable[[T | None], object] = repr,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """`wait_until` with a default bound and a short interval, for what a test can only observe by asking
    often (a metric, a file): the first true value `check` returns."""
    found = wait_until(
        what, check, timeout, interval=interval, ignore=ignore, detail=detail, clock=clock, sleep=sleep
    )
    assert found  # wait_until returns only what `bool` held for
    return found
