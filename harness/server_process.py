"""One server process of the harness (etcd, kube-apiserver, kubelet, containerd, ...) with its output in a
log file: it dies with its parent (`child_process.die_with_parent`), runs in a session of its own (a Ctrl-C
in a terminal reaches only the harness, which stops its servers in order), is stopped with SIGTERM then
SIGKILL, and every wait for it is bounded and fails with the end of its log."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO

from harness.bounded import until
from harness.child_process import die_with_parent

STOP_TIMEOUT = 10.0


class ServerStartError(RuntimeError):
    """A server exited or did not become ready in time (the message carries the end of its log)."""


class ServerProcess:
    """One server process with its output in a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        stop_timeout: float = STOP_TIMEOUT,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.stop_timeout = stop_timeout
        self._log: IO[bytes] = log_path.open("wb")
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop it in order
            preexec_fn=die_with_parent,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()


def wait_for(
    what: str,
    process: ServerProcess,
    ready: Callable[[], bool],
    timeout: float,
    error: type[ServerStartError] = ServerStartError,
) -> None:
    """Poll `ready` until it is true (`harness.bounded.until`); `error` when the process exits first or
    `timeout` passes."""

    def ready_while_running() -> bool:
        if not process.running():
            raise error(
                f"{process.name} exited with status {process.popen.returncode} before {what}; "
                f"end of {process.log_path}:\n{process.log_tail()}"
            )
        return ready()

    try:
        until(f"{process.name} {what}", ready_while_running, timeout, 0.1)
    except TimeoutError:
        tail = process.log_tail()
        raise error(
            f"{process.name} not {what} after {timeout:.0f}s; end of {process.log_path}:\n{tail}"
        ) from None
