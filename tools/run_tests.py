"""`make test`: every tier, with the cluster tier running beside the others.

The cluster tier starts its own Kubernetes node (kubelet, containerd, a registry, pods) and spends most of
its minutes waiting on it: pods starting, images pulled, a Spark run. It shares nothing with the other
tiers but the machine, so the two runs go side by side and the suite ends about when the longer one does.
Each run prints its own time per tier. The cluster run's output goes to a log (streamed there, printed
here when it ends) so the two never interleave line by line.

Every wait is bounded: a hung test is ended by pytest-timeout (stacks printed); a run still going
`RUN_LIMIT_S` after it started is stopped, its process group killed, and reported as failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUN_LIMIT_S = 45 * 60  # far beyond a normal run (about 20 min); CI stops at 90
LOGS = Path(".test-logs")


def _pytest(selection: str, durations: int, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-m", selection, f"--durations={durations}", *extra]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a run and everything it started (brokers, a node, operators)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _wait(proc: subprocess.Popen[bytes], started: float, what: str) -> int:
    try:
        return proc.wait(max(1.0, started + RUN_LIMIT_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        print(f"==> the {what} run is still going after {RUN_LIMIT_S // 60} min: stopped", flush=True)
        _stop(proc)
        return 1


def main(extra: list[str]) -> int:
    # Stopped from outside (a CI timeout, kill): both runs and what they started go too (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    LOGS.mkdir(exist_ok=True)
    log = LOGS / "cluster.log"
    started = time.monotonic()
    with log.open("wb") as out:
        cluster = subprocess.Popen(
            _pytest("cluster", 10, extra), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    others: subprocess.Popen[bytes] | None = None
    try:
        print(f"==> cluster tier started beside the others (output in {log}, shown when it ends)", flush=True)
        print("==> unit, compat, spark, k8s and e2e tiers", flush=True)
        others = subprocess.Popen(_pytest("not cluster", 15, extra), start_new_session=True)
        others_rc = _wait(others, started, "unit..e2e")
        print(
            f"==> unit..e2e ended after {time.monotonic() - started:.0f} s; waiting for the cluster tier",
            flush=True,
        )
        cluster_rc = _wait(cluster, started, "cluster")
    finally:
        for proc in (others, cluster):
            if proc is not None:
                _stop(proc)
    print("==> cluster tier output:", flush=True)
    sys.stdout.write(log.read_text(errors="replace"))
    total = time.monotonic() - started
    verdict = "passed" if others_rc == cluster_rc == 0 else "FAILED"
    codes = f"unit..e2e exit {others_rc}, cluster exit {cluster_rc}"
    print(f"==> every tier {verdict} ({codes}) in {total / 60:.1f} min", flush=True)
    return 0 if verdict == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
