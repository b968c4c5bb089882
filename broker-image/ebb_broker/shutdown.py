"""Bounded shutdown: every step of SIGTERM handling has a time bound, and an overrun is named in the log.

A broker that ignores SIGTERM until Kubernetes kills it after its grace period leaves no trace of why;
one that gives up on a stuck step after a bound says which step overran and exits at once, without the
clean-shutdown marker when the log manager did not finish closing, so the next start recovers from the
recovery points (as after kill -9; nothing acknowledged is lost). The bounds add up to well under the
chart's ``terminationGracePeriodSeconds`` (120 s).

Blocking work (closing the log manager, joining worker threads) runs in a daemon thread: a thread of an
executor is joined at interpreter exit without a bound, a daemon thread dies with the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger("ebb_broker")

# Seconds each step may take (docs/broker.md lists them).
CLOSE_CONNECTIONS_S = 10.0
STOP_BACKGROUND_TASKS_S = 5.0
CLOSE_LOG_MANAGER_S = 60.0
JOIN_WORKER_THREADS_S = 20.0

EXIT_SHUTDOWN_OVERRAN = 1


@dataclass
class Shutdown:
    """The steps of one shutdown, in order; the ones that overran their bound."""

    overran: list[str] = field(default_factory=list)

    async def step(self, name: str, work: Awaitable[object], seconds: float) -> bool:
        """Await ``work`` for at most ``seconds``; True if it completed. An overrun or a failure is logged
        naming the step, and the shutdown goes on with the next step."""
        try:
            await asyncio.wait_for(work, seconds)
        except TimeoutError:
            self._overrun(name, seconds)
            return False
        except Exception:
            log.exception("shutdown: %s failed", name)
            return False
        return True

    async def blocking_step(self, name: str, work: Callable[[], object], seconds: float) -> bool:
        """Run ``work`` in a daemon thread for at most ``seconds`` (see the module docstring)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle(exc: BaseException | None) -> None:
            if done.done():
                return
            if exc is None:
                done.set_result(None)
            else:
                done.set_exception(exc)

        def run() -> None:
            outcome: BaseException | None = None
            try:
                work()
            except BaseException as exc:  # handed to the loop's thread below
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the loop is gone after an overrun
                loop.call_soon_threadsafe(settle, outcome)

        threading.Thread(target=run, name=f"shutdown: {name}", daemon=True).start()
        return await self.step(name, asyncio.shield(done), seconds)

    def _overrun(self, name: str, seconds: float) -> None:
        self.overran.append(name)
        log.error("shutdown: %s overran its bound of %g s; going on without it", name, seconds)

    def exit_if_overran(self) -> None:
        """After the last step: if one overran, exit now with EXIT_SHUTDOWN_OVERRAN. Returning would let
        asyncio.run and the interpreter join the stuck threads without a bound."""
        if not self.overran:
            return
        log.error(
            "shutdown incomplete (%s overran); exiting %d; %s",
            ", ".join(self.overran),
            EXIT_SHUTDOWN_OVERRAN,
            "threads still running: "
            + ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread()),
        )
        logging.shutdown()
        os._exit(EXIT_SHUTDOWN_OVERRAN)
