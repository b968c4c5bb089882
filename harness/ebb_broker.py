"""Start a real `ebb-broker` process for tests and benchmarks, and stop or kill it.

The broker listens on port 0 (a free port chosen by the kernel) and the launcher reads the
actual address from its `ebb-broker listening on HOST:PORT` line, so parallel brokers never
race for ports. Its stderr goes to `<log_dir>/ebb-broker.log` for post-mortems. Usable as a
context manager; `restart()` keeps the data directory (and the port, when it is still free).
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from types import TracebackType

from prometheus_client.parser import text_string_to_metric_families

from harness.bounded import until
from harness.child_process import die_with_parent
from harness.process_usage import ProcessUsage

_LISTENING = re.compile(r"ebb-broker listening on (?P<host>[^\s:]+):(?P<port>\d+)")
# Every listener of the line: "HOST:PORT (NAME)" (the first one is also what _LISTENING reads).
_LISTENER = re.compile(r"(?P<host>[^\s:]+):(?P<port>\d+) \((?P<name>[A-Za-z0-9_]+)\)")


class BrokerStartError(RuntimeError):
    """The broker exited or did not print its listening line in time."""


class EbbBroker:
    """One ebb-broker process over one data directory."""

    def __init__(
        self,
        data_dir: Path,
        *,
        configs: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        metrics_port: int | None = None,
        log_dir: Path | None = None,
        start_timeout: float = 30.0,
        nofile: int | None = None,
        add_scram: list[str] | None = None,
    ):
        self.data_dir = Path(data_dir)
        self.configs = dict(configs or {})
        self.host = host
        self.port = port
        self.metrics_port = metrics_port
        self.log_dir = Path(log_dir) if log_dir else self.data_dir.parent
        self.start_timeout = start_timeout
        # The process's descriptor limit (soft and hard), to test what the broker does under a low ulimit -n.
        self.nofile = nofile
        # --add-scram values ('SCRAM-SHA-512=[name=admin,password=...]'), passed at every start.
        self.add_scram = list(add_scram or [])
        # With a `listeners` config: the port each listener bound, by name (kept across restarts).
        self.listener_ports: dict[str, int] = {}
        self.proc: subprocess.Popen[str] | None = None
        self._log_file: object = None
        # Reads the process's stdout to its end and closes it (see `_read_stdout`).
        self._stdout_reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_of(self, listener: str, host: str | None = None) -> str:
        """host:port of one listener (by name) of a broker started with a `listeners` config."""
        return f"{host or self.host}:{self.listener_ports[listener.upper()]}"

    def _configs(self) -> dict[str, str]:
        """The configs, with listeners given port 0 pinned to the port they bound first (so a restart keeps
        every client's bootstrap address)."""
        configs = dict(self.configs)
        if "listeners" in configs and self.listener_ports:
            configs["listeners"] = re.sub(
                r"([A-Za-z0-9_]+)://([^,]*):0\b",
                lambda m: f"{m[1]}://{m[2]}:{self.listener_ports.get(m[1].upper(), 0)}",
                configs["listeners"],
            )
        return configs

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "ebb_broker",
            "--data-dir",
            str(self.data_dir),
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        if self.metrics_port is not None:
            cmd += ["--metrics-port", str(self.metrics_port)]
        for key, value in self._configs().items():
            cmd += ["--config", f"{key}={value}"]
        for value in self.add_scram:
            cmd += ["--add-scram", value]
        return cmd

    def start(self) -> EbbBroker:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("broker already running")
        self._reap()  # a process that exited by itself (killed from outside): its pipe and log file
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_path
        log_file = log_path.open("a")
        self._log_file = log_file
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=self._preexec,
        )
        first: list[str] = []
        got_first = threading.Event()
        self._stdout_reader = threading.Thread(
            target=self._read_stdout,
            args=(self.proc, first, got_first),
            name="ebb-broker-stdout",
            daemon=True,
        )
        self._stdout_reader.start()
        got_first.wait(self.start_timeout)
        line = first[0] if first else None
        m = _LISTENING.search(line or "")
        if m is None:
            self.kill()
            raise BrokerStartError(
                f"ebb-broker did not start (exit {self.proc.returncode}); see {log_path}:\n"
                + log_path.read_text()[-3000:]
            )
        self.port = int(m.group("port"))
        for lm in _LISTENER.finditer(line or ""):
            self.listener_ports[lm["name"]] = int(lm["port"])
        return self

    def _preexec(self) -> None:
        if die_with_parent is not None:
            die_with_parent()  # a killed test run leaves no broker behind
        if self.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    @staticmethod
    def _read_stdout(proc: subprocess.Popen[str], first: list[str], got_first: threading.Event) -> None:
        """The first line (the listening line), then the rest drained so the broker never blocks on a full
        pipe; the pipe is closed at its end (the process exited), by the one thread that reads it."""
        assert proc.stdout is not None
        with proc.stdout:
            first.append(proc.stdout.readline())
            got_first.set()
            for _ in proc.stdout:
                pass

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (clean shutdown: flush, checkpoints, marker); returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self._reap()

    def kill(self) -> None:
        """SIGKILL: the crash the engine must survive without losing acknowledged records."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reap()

    def _reap(self) -> int:
        """After the process exited: its stdout reader done (the pipe closed), its log file closed."""
        code = self.proc.returncode if self.proc is not None else 0
        if self._stdout_reader is not None:
            self._stdout_reader.join(10)  # the process is gone: the pipe's end is already there
            self._stdout_reader = None
        if self._log_file is not None:
            self._log_file.close()  # type: ignore[attr-defined]
            self._log_file = None
        return code if code is not None else 0

    def restart(self, *, kill: bool = False) -> EbbBroker:
        if kill:
            self.kill()
        else:
            self.stop()

        def started() -> EbbBroker | None:
            try:
                return self.start()
            except BrokerStartError:
                # The old port may still be in TIME_WAIT for a moment; fall back to any port.
                self.port = 0
                self.listener_ports = {}
                raise

        return until("the broker started again", started, 10, 0, ignore=(BrokerStartError,))

    def metric(self, name: str, **labels: str) -> float:
        """One sample of the broker's Prometheus metrics (0.0 when the series does not exist yet).

        Needs `metrics_port`. Tests use it to prove background work ran (a retention pass, a cleaner
        check) before asserting what that work did or did not do.
        """
        if self.metrics_port is None:
            raise RuntimeError("this broker was started without metrics_port")
        url = f"http://{self.host}:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return float(sample.value)
        return 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def usage(self) -> ProcessUsage:
        """The running broker's resident memory, descriptors and CPU time, from /proc."""
        if self.proc is None:
            raise RuntimeError("broker not started")
        return ProcessUsage.of(self.proc.pid)

    @property
    def log_path(self) -> Path:
        """Where the broker's stderr goes (appended to across restarts)."""
        return self.log_dir / "ebb-broker.log"

    def __enter__(self) -> EbbBroker:
        return self.start() if not self.alive() else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
