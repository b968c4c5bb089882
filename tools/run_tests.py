"""`make test`: every tier, in two pytest runs side by side.

Most of the suite's minutes are spent waiting, not computing: a broker's group rebalance, a JVM tool
starting, an operator's resync, pods starting on the node, a Spark run. The tiers share nothing but the
machine (each starts its own brokers, control plane or node), so they run as two processes, and the
suite ends when the longer one does:

- unit, compat, k8s, then cluster (the node runs last, as in a single run);
- spark and e2e (Spark runs, and in e2e an operator and brokers per test).

README, Running the tests, gives each tier's time on the 2-core CI machine. Two runs, not more: with
three the 2-core machine is loaded enough that timing-sensitive tests (a group rebalance after a broker
restart, a leader's Lease taken over after kill -9) fail now and then.

The first run's output streams here; the other goes to a log in `.test-logs/`, printed whole when it
ends, so lines never interleave; each run also writes a JUnit XML report there (every test's time).
Each run prints its own time per tier, and short tracebacks: a failure shows where it happened and what
was waited for, not the whole test's source.

Every wait is bounded: a hung test is ended by pytest-timeout (stacks printed); a run still going
`RUN_LIMIT_S` after the start is stopped, its process group killed, and reported as failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RUN_LIMIT_S = 45 * 60  # far beyond a normal run (about 20 min); CI stops at 90
LOGS = Path(".test-logs")


@dataclass(frozen=True)
class Run:
    name: str
    selection: str  # a pytest marker expression (each tier's marker comes from its directory)


RUNS = (
    Run("unit-compat-k8s-cluster", "unit or compat or k8s or cluster"),
    Run("spark-e2e", "spark or e2e"),
)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a run and everything it started (brokers, a node, operators)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _wait(proc: subprocess.Popen[bytes], started: float, name: str) -> int:
    try:
        return proc.wait(max(1.0, started + RUN_LIMIT_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        print(f"==> run {name} is still going after {RUN_LIMIT_S // 60} min: stopped", flush=True)
        _stop(proc)
        return 1


def main(extra: list[str]) -> int:
    # Stopped from outside (a CI timeout, kill): every run and what it started go too (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    codes: dict[str, int] = {}
    try:
        for i, run in enumerate(RUNS):
            argv = [sys.executable, "-m", "pytest", "-q", "-m", run.selection, "--durations=10", "--tb=short"]
            argv.append(f"--junitxml={LOGS / run.name}.xml")  # every test's outcome and time, for CI
            argv += extra
            if i == 0:
                print(f"==> run {run.name} ({run.selection}): output follows", flush=True)
                procs[run.name] = subprocess.Popen(argv, start_new_session=True)
                continue
            log = LOGS / f"{run.name}.log"
            print(f"==> run {run.name} ({run.selection}) beside it: {log}, shown when it ends", flush=True)
            with log.open("wb") as out:
                procs[run.name] = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
        for run in RUNS:
            codes[run.name] = _wait(procs[run.name], started, run.name)
            print(f"==> run {run.name} ended (exit {codes[run.name]}) at {time.monotonic() - started:.0f} s")
            if run is not RUNS[0]:
                sys.stdout.write((LOGS / f"{run.name}.log").read_text(errors="replace"))
            sys.stdout.flush()
    finally:
        for proc in procs.values():
            _stop(proc)
    verdict = "passed" if codes and not any(codes.values()) else "FAILED"
    summary = ", ".join(f"{name} exit {code}" for name, code in codes.items())
    print(f"==> every tier {verdict} ({summary}) in {(time.monotonic() - started) / 60:.1f} min", flush=True)
    return 0 if verdict == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
