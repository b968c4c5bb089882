"""The node leaves the machine as it found it, even when the process that started it is killed -9: its
processes, containerd's shims and the pods' processes are gone, and so are its mounts, network
namespaces, bridge and iptables chains; the FORWARD policy and the sysctls are back (harness.node_janitor).

Runs before the session's node starts (tests/cluster/conftest.py orders it first): one node per machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.node import BRIDGE, CONTAINERD_SOCKET, RUN_DIR
from harness.node_janitor import SYSCTLS
from tests.cluster.conftest import ROOT, Say

pytestmark = pytest.mark.timeout(900)

OWNER = """
import sys, time
from pathlib import Path
from harness.images import ensure_node_images
from harness.node import running_cluster
from harness.node_binaries import NodeBinaries

with running_cluster(Path(sys.argv[1]), ensure_node_images(NodeBinaries.from_cache().bin)) as cluster:
    print("READY", flush=True)
    time.sleep(900)
"""


def _host(workdir: Path) -> dict[str, object]:
    """What a node changes, read from the host itself."""
    chains = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    mounts = Path("/proc/self/mountinfo").read_text()
    shims = [
        p.name
        for p in Path("/proc").glob("[0-9]*")
        if str(CONTAINERD_SOCKET).encode() in (_cmdline(p) or b"")
    ]
    return {
        "sysctls": {key: (Path("/proc/sys") / key).read_text().strip() for key in SYSCTLS},
        "forward policy": _forward_policy(chains),
        "own chains": sorted({w for w in chains.split() if w.startswith(("KUBE-", "CNI-"))}),
        "bridge": BRIDGE in links,
        "mounts below the node": [m for m in mounts.splitlines() if str(workdir) in m or str(RUN_DIR) in m],
        "processes on its containerd": shims,
        "pod cgroups": Path("/sys/fs/cgroup/memory/ebb-node").exists(),
    }


def _forward_policy(chains: str) -> str:
    """The filter table's FORWARD policy. A host that never loaded the filter table forwards everything:
    that is ACCEPT, the policy the table gets when it is created (listing it, as the janitor's snapshot
    does, creates it on nft-based iptables)."""
    table = ""
    for line in chains.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif table == "filter" and line.startswith(":FORWARD "):
            return line.split()[1]
    return "ACCEPT"


def _cmdline(proc: Path) -> bytes | None:
    with contextlib.suppress(OSError):
        return proc.joinpath("cmdline").read_bytes()
    return None


def test_a_node_whose_owner_is_killed_leaves_the_host_as_it_was(tmp_path: Path, say: Say) -> None:
    workdir = tmp_path / "node"
    before = _host(workdir)
    began = time.monotonic()
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(workdir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert owner.stdout is not None
        deadline = time.monotonic() + 600
        output = []
        while (line := owner.stdout.readline()) and "READY" not in line and time.monotonic() < deadline:
            output.append(line)
        assert "READY" in line, "".join(output[-30:])
        running = _host(workdir)
        say(f"a node started for the kill test: {time.monotonic() - began:.1f} s")
        # The node did change the host: pods run on the bridge, kube-proxy wrote its chains.
        assert running["bridge"] and running["processes on its containerd"] and running["pod cgroups"]
        chains = running["own chains"]
        assert isinstance(chains, list) and any(c.startswith("KUBE-") for c in chains), chains

        began = time.monotonic()
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(30)
        janitor_log = RUN_DIR / "janitor.log"
        deadline = time.monotonic() + 180
        while not janitor_log.read_text().rstrip().endswith("host restored"):
            assert time.monotonic() < deadline, janitor_log.read_text()[-3000:]
            time.sleep(0.5)
        say(f"owner killed -9, host restored by the janitor: {time.monotonic() - began:.1f} s")
        assert _host(workdir) == before
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
            owner.wait(30)
        assert owner.stdout is not None
        owner.stdout.close()
