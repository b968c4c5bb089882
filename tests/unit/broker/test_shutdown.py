"""Bounded shutdown (ebb_broker.shutdown): a stuck step is given up after its bound and named in the log."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from ebb_broker.shutdown import Shutdown

pytestmark = pytest.mark.unit


def test_a_blocked_step_is_given_up_after_its_bound_and_named(caplog: pytest.LogCaptureFixture) -> None:
    """A thread stuck on a lock (what a deadlocked LogManager.close() does) does not hold the shutdown:
    the step returns False after its bound, the log names it, and the next step still runs."""
    stuck = threading.Lock()
    stuck.acquire()
    ran: list[str] = []

    async def shut() -> tuple[bool, bool, bool]:
        done = Shutdown()
        blocked = await done.blocking_step("closing the log manager", lambda: stuck.acquire(), 0.2)
        waited = await done.step("closing connections", asyncio.sleep(30), 0.2)
        after = await done.blocking_step("joining worker threads", lambda: ran.append("joined"), 10)
        assert done.overran == ["closing the log manager", "closing connections"]
        return blocked, waited, after

    with caplog.at_level(logging.ERROR, logger="ebb_broker"):
        assert asyncio.run(shut()) == (False, False, True)
    stuck.release()
    assert ran == ["joined"]
    assert "shutdown: closing the log manager overran its bound of 0.2 s" in caplog.text
    assert "shutdown: closing connections overran" in caplog.text


def test_a_failing_step_is_logged_and_the_shutdown_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> None:
        raise OSError("disk gone")

    async def shut() -> Shutdown:
        done = Shutdown()
        assert not await done.blocking_step("closing the log manager", fail, 10)
        return done

    with caplog.at_level(logging.ERROR, logger="ebb_broker"):
        done = asyncio.run(shut())
    assert done.overran == []
    assert "shutdown: closing the log manager failed" in caplog.text and "disk gone" in caplog.text
