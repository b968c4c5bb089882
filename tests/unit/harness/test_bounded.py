"""`wait_until`: the one polling wait of the tests returns what it waited for, and fails by name."""

from __future__ import annotations

import pytest

from harness.bounded import WaitTimeout, wait_until


class Clock:
    """A clock that moves only when the wait sleeps."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += 1


def test_returns_the_first_true_value_it_sees() -> None:
    clock, answers = Clock(), iter([None, {}, {"phase": "Succeeded"}])
    found = wait_until("the object", lambda: next(answers), 10, clock=clock, sleep=clock.sleep)
    assert (found, clock.slept) == ({"phase": "Succeeded"}, 2)


def test_fails_after_its_bound_naming_what_it_waited_for_and_what_it_saw() -> None:
    clock = Clock()
    with pytest.raises(
        WaitTimeout, match="DeleteRecords dr-1 done: not within 3 s; last seen: phase Running"
    ):
        wait_until(
            "DeleteRecords dr-1 done",
            lambda: {"phase": "Running"},
            3,
            until=lambda obj: obj["phase"] == "Succeeded",
            interval=0.5,
            detail=lambda obj: f"phase {obj['phase']}",
            clock=clock,
            sleep=clock.sleep,
        )
    assert clock.now == 3.0  # polled up to the bound, not beyond
