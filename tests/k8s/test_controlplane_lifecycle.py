"""The harness's own promise to every other test: a control plane it starts is gone afterwards, with its
data, whether the block ends normally or the process that started it is killed with -9."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.bounded import wait_until
from harness.controlplane import running_control_plane
from harness.k8s_binaries import Binaries, BinariesMissing

REPO = Path(__file__).parent.parent.parent

HOLDER = """
import json, sys, time
from harness.controlplane import running_control_plane
with running_control_plane() as cp:
    print(json.dumps({"pids": cp.pids, "workdir": str(cp.workdir)}), flush=True)
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, exited but not yet reaped by its parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: list[int], timeout: float = 15) -> None:
    wait_until(f"processes {pids} gone", lambda: not [p for p in pids if alive(p)], timeout, interval=0.1)


def test_block_exit_stops_both_servers_and_deletes_the_data() -> None:
    with running_control_plane() as cp:
        pids = cp.pids
        workdir = cp.workdir
        assert all(alive(p) for p in pids)
        assert cp.kubectl("get", "namespace", "default", "-o", "name").stdout.strip() == "namespace/default"
    wait_gone(pids)
    assert not workdir.exists()


def test_kill_9_of_the_owner_leaves_no_server_behind() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None
        started = json.loads(holder.stdout.readline())
        assert all(alive(p) for p in started["pids"])
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    wait_gone(started["pids"])
    shutil.rmtree(started["workdir"])  # the killed owner could not delete it


def test_missing_build_is_a_clear_error_naming_the_make_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EBB_CACHE", str(tmp_path))
    with pytest.raises(BinariesMissing, match=r"run `make harness-k8s`"):
        Binaries.from_cache()
