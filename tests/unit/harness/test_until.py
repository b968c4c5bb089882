"""`harness.bounded.until` (`wait_until` with a default bound and a short interval) on a manual clock:
what it returns, and how it fails for a test and for the harness."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.bounded import WaitTimeout, until


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_returns_the_first_truthy_value() -> None:
    clock, answers = FakeClock(), iter([0, None, "", 42])
    assert until("the answer", lambda: next(answers), 5, 1, clock=clock, sleep=clock.sleep) == 42
    assert clock.slept == [1, 1, 1]


def test_fails_after_its_bound_naming_what_and_the_last_value() -> None:
    clock = FakeClock()
    with pytest.raises(WaitTimeout, match=r"^the metric at 3: not within 2 s; last seen: 0$") as failed:
        until("the metric at 3", lambda: 0, 2, 0.5, clock=clock, sleep=clock.sleep)
    assert clock.now == 2.0  # polled up to the bound, not beyond
    # A failed test for the tests, a TimeoutError for the harness code that catches one.
    assert isinstance(failed.value, AssertionError) and isinstance(failed.value, TimeoutError)


def test_a_timeout_shows_what_detail_makes_of_the_last_value() -> None:
    """What a wait on a cluster shows when it gives up: the object's state or a log, not `None`."""
    clock = FakeClock()
    with pytest.raises(WaitTimeout, match=r"^the run: not within 2 s; last seen: None, phase Running$"):
        until(
            "the run",
            lambda: None,
            2,
            1,
            detail=lambda last: f"{last}, phase Running",
            clock=clock,
            sleep=clock.sleep,
        )


def test_ignored_errors_mean_not_yet_and_the_last_one_is_named() -> None:
    clock, calls = FakeClock(), []

    def leader() -> str:
        calls.append(clock.now)
        if len(calls) < 3:
            raise ConnectionError("not yet")
        return "broker-1"

    assert (
        until("a leader", leader, 5, 1, ignore=(ConnectionError,), clock=clock, sleep=clock.sleep)
        == "broker-1"
    )
    with pytest.raises(TimeoutError, match=r"last seen: ConnectionError: down$") as failed:
        until(
            "a leader",
            _raise(ConnectionError("down")),
            1,
            1,
            ignore=(ConnectionError,),
            clock=clock,
            sleep=clock.sleep,
        )
    assert isinstance(failed.value.__cause__, ConnectionError)
    with pytest.raises(KeyError):  # an error not ignored is the test's
        until(
            "a leader",
            _raise(KeyError("bug")),
            1,
            1,
            ignore=(ConnectionError,),
            clock=clock,
            sleep=clock.sleep,
        )


def _raise(exc: BaseException) -> Callable[[], object]:
    def check() -> object:
        raise exc

    return check
