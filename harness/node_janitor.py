"""The node's janitor: puts the host back as it was after a node ran on it (harness.node), also when the
process that started the node is killed.

A node changes the host (docs/cluster-node.md): iptables chains and rules (kube-proxy's KUBE-*, the CNI
plugins' CNI-*), the FORWARD policy, sysctls (kubelet's kernel tunables, ip_forward, route_localnet),
a bridge and veth pairs, network namespaces, mounts (kubelet's root directory, container root
filesystems, secrets and emptyDirs), cgroups, and containerd's shims, which are re-parented to PID 1
and so do not die with the test process.

`python -m harness.node_janitor STATE_DIR` is started before any of that, in a session of its own,
with a pipe on its stdin from the node's owner and its output in `janitor.log`. It first records the
host's state (`snapshot.json`), says `ready`, then waits for end of file on stdin, which comes both
from a normal teardown (the owner closes the pipe after stopping what it can gracefully) and from the
owner's death, kill -9 included.
Then it kills what the node left (the processes listed in `pids.json`, the shims of the node's
containerd, every process in the node's cgroups), unmounts, deletes links, network namespaces and the
iptables chains created since the snapshot (and only those, with the rules that jump to them), restores
the FORWARD policy and the sysctls, removes the node's cgroups and exits. A snapshot left by a janitor
that could not finish is cleaned up against before a new one is taken (harness.node runs it first).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.bounded import until

SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/route_localnet",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    # kubelet's kernel tunables (pkg/kubelet/cm/container_manager_linux.go setupKernelTunables)
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
TABLES = ("filter", "nat", "mangle", "raw")
OWN_CHAIN_PREFIXES = ("KUBE-", "CNI-")
NETNS_DIR = Path("/var/run/netns")
CNI_STATE = Path("/var/lib/cni")  # libcni's result cache (containerd's go-cni writes it there)
CGROUP_FS = Path("/sys/fs/cgroup")
_KILL_TIMEOUT = 30.0


@dataclass
class NodeFootprint:
    """What the node owns on the host, named by harness.node when it starts the janitor."""

    run_dir: str  # containerd's state and socket, the janitor's files
    containerd_socket: str
    mount_roots: list[str]  # every mount below these is the node's
    bridge: str
    cni_network: str  # the CNI network's name: containerd caches its results in /var/lib/cni/results
    pod_cidr: str
    cgroup_root: str  # kubelet's cgroupRoot, in every cgroup v1 hierarchy


@dataclass
class Snapshot:
    footprint: NodeFootprint
    sysctls: dict[str, str] = field(default_factory=dict)
    forward_policy: dict[str, str] = field(default_factory=dict)  # iptables command -> FORWARD policy
    chains: dict[str, list[str]] = field(default_factory=dict)  # "iptables filter" -> chains
    netns: list[str] = field(default_factory=list)
    nft_tables: list[str] = field(default_factory=list)
    cni_dirs: list[str] = field(default_factory=list)  # of CNI_STATE's directories, those that existed
    netns_dir: bool = True  # whether NETNS_DIR existed (containerd makes it)


def _log(message: str) -> None:
    print(f"[janitor {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _run(*argv: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc


def _iptables_commands() -> list[str]:
    return [cmd for cmd in ("iptables", "ip6tables") if _which(cmd)]


def _ipt(cmd: str, *args: str) -> subprocess.CompletedProcess[str]:
    """iptables waiting for the xtables lock (kube-proxy may hold it)."""
    return _run(cmd, "-w", "5", *args)


def _chains(cmd: str, table: str) -> list[str]:
    proc = _ipt(cmd, "-t", table, "-S")
    if proc.returncode != 0:
        return []
    return [line.split()[1] for line in proc.stdout.splitlines() if line.startswith(("-N ", "-P "))]


def _forward_policy(cmd: str) -> str:
    for line in _ipt(cmd, "-t", "filter", "-S", "FORWARD").stdout.splitlines():
        if line.startswith("-P FORWARD "):
            return line.split()[2]
    return "ACCEPT"


def _nft_tables() -> list[str]:
    proc = _run("nft", "list", "tables") if _which("nft") else None
    return proc.stdout.splitlines() if proc and proc.returncode == 0 else []


def _which(name: str) -> bool:
    return any((Path(d) / name).exists() for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"))


def take_snapshot(footprint: NodeFootprint) -> Snapshot:
    snap = Snapshot(footprint)
    for key in SYSCTLS:
        with contextlib.suppress(OSError):
            snap.sysctls[key] = (Path("/proc/sys") / key).read_text().strip()
    for cmd in _iptables_commands():
        snap.forward_policy[cmd] = _forward_policy(cmd)
        for table in TABLES:
            snap.chains[f"{cmd} {table}"] = _chains(cmd, table)
    snap.netns = sorted(p.name for p in NETNS_DIR.glob("*")) if NETNS_DIR.is_dir() else []
    snap.netns_dir = NETNS_DIR.is_dir()
    snap.nft_tables = _nft_tables()
    snap.cni_dirs = [str(p) for p in (CNI_STATE, CNI_STATE / "results") if p.is_dir()]
    return snap


def load_snapshot(path: Path) -> Snapshot:
    data = json.loads(path.read_text())
    footprint = NodeFootprint(**data.pop("footprint"))
    return Snapshot(footprint, **data)


# --- cleanup --------------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie of ours is dead for our purposes.
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _kill_all(pids: list[int], what: str) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):  # what is left is logged below
        until(f"{what} gone", lambda: not any(_alive(p) for p in pids), _KILL_TIMEOUT, 0.1)
    left = [p for p in pids if _alive(p)]
    if left:
        _log(f"{what}: still alive after SIGKILL: {left}")


def kill_owned_processes(run_dir: Path) -> None:
    """The processes harness.node started (pid and start time recorded, so a reused pid is left alone)."""
    try:
        recorded = json.loads((run_dir / "pids.json").read_text())
    except (OSError, ValueError):
        return
    pids = [int(pid) for pid, start in recorded if _start_time(int(pid)) == start]
    if pids:
        _log(f"killing the node's processes {pids}")
        _kill_all(pids, "node processes")


def kill_shims(socket: str) -> None:
    """containerd-shim-runc-v2 of this node's containerd (its socket is on their command line)."""
    shims = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            argv = proc.joinpath("cmdline").read_bytes().split(b"\0")
            if b"-address" in argv and socket.encode() in argv:
                shims.append(int(proc.name))
    if shims:
        _log(f"killing {len(shims)} containerd shims")
        _kill_all(shims, "shims")


def _cgroup_dirs(root: str) -> list[Path]:
    """The node's cgroup directories in every v1 hierarchy, deepest first."""
    dirs: list[Path] = []
    for hierarchy in CGROUP_FS.iterdir() if CGROUP_FS.is_dir() else []:
        top = hierarchy / root
        if top.is_dir() and not top.is_symlink():
            dirs.extend(p for p in top.rglob("*") if p.is_dir())
            dirs.append(top)
    return sorted(set(dirs), key=lambda p: len(p.parts), reverse=True)


def kill_cgroup_processes(root: str) -> None:
    """Every process in the node's cgroups: the pods' containers."""

    def emptied() -> bool:
        """Kill what is in the cgroups now; True once nothing is."""
        pids: set[int] = set()
        for d in _cgroup_dirs(root):
            with contextlib.suppress(OSError):
                pids.update(int(x) for x in d.joinpath("cgroup.procs").read_text().split())
        pids = {p for p in pids if _alive(p)}
        if pids:
            _log(f"killing {len(pids)} processes left in the node's cgroups")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return not pids

    try:
        until("the node's cgroups emptied", emptied, _KILL_TIMEOUT, 0.5)
    except TimeoutError:
        _log(f"processes still in the node's cgroups after {_KILL_TIMEOUT:.0f} s")


def remove_cgroups(root: str) -> None:
    for d in _cgroup_dirs(root):
        with contextlib.suppress(OSError):
            d.rmdir()


def _mounts_below(roots: list[str]) -> list[str]:
    targets = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if any(point == r or point.startswith(r.rstrip("/") + "/") for r in roots):
            targets.append(point)
    return targets


def unmount_below(roots: list[str]) -> None:
    """Every mount at or below one of `roots`, deepest first (lazily: a busy one goes when freed)."""
    targets = _mounts_below(roots)
    for point in sorted(set(targets), key=lambda p: p.count("/"), reverse=True):
        _run("umount", "-l", point)
    if targets:
        _log(f"unmounted {len(set(targets))} mounts")


def remove_netns(before: list[str], dir_existed: bool) -> None:
    if not NETNS_DIR.is_dir():
        return
    for ns in sorted(NETNS_DIR.glob("*")):
        if ns.name not in before:
            _run("umount", "-l", str(ns))
            with contextlib.suppress(OSError):
                ns.unlink()
            _log(f"removed network namespace {ns.name}")
    if not dir_existed:
        with contextlib.suppress(OSError):
            NETNS_DIR.rmdir()


def remove_links(bridge: str) -> None:
    if _run("ip", "link", "show", bridge).returncode == 0:
        # veths attached to it (their peers' namespaces are already gone, or going)
        for line in _run("ip", "-o", "link", "show", "master", bridge).stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            _run("ip", "link", "delete", name)
        _run("ip", "link", "delete", bridge)
        _log(f"deleted bridge {bridge}")


def _own(chain: str, before: list[str]) -> bool:
    return chain.startswith(OWN_CHAIN_PREFIXES) and chain not in before


def clean_iptables(snap: Snapshot) -> None:
    """Delete the chains created since the snapshot (KUBE-*, CNI-*) and the rules that jump to them or
    name the pod network; nothing else is touched. Then the FORWARD policy as it was."""
    fp = snap.footprint
    for cmd in _iptables_commands():
        removed = 0
        for table in TABLES:
            before = snap.chains.get(f"{cmd} {table}", [])
            own = [c for c in _chains(cmd, table) if _own(c, before)]
            for line in _ipt(cmd, "-t", table, "-S").stdout.splitlines():
                if not line.startswith("-A "):
                    continue
                words = shlex.split(line)
                chain = words[1]
                if _own(chain, before):
                    continue  # flushed below
                target = words[words.index("-j") + 1] if "-j" in words else ""
                if target in own or fp.pod_cidr in line or fp.bridge in words:
                    _ipt(cmd, "-t", table, "-D", *words[1:])
                    removed += 1
            for chain in own:
                _ipt(cmd, "-t", table, "-F", chain)
            for chain in own:
                if _ipt(cmd, "-t", table, "-X", chain).returncode == 0:
                    removed += 1
        policy = snap.forward_policy.get(cmd)
        if policy and _forward_policy(cmd) != policy:
            _ipt(cmd, "-P", "FORWARD", policy)
            _log(f"{cmd} FORWARD policy back to {policy}")
        if removed:
            _log(f"{cmd}: removed {removed} chains and rules")


def clean_nft(before: list[str]) -> None:
    for table in _nft_tables():
        if table not in before and table.split()[-1] == "kube-proxy":
            _run("nft", "delete", *table.split()[1:])
            _log(f"deleted nftables {table}")


def remove_cni_results(network: str, existed: list[str]) -> None:
    """The CNI results cached for the node's network, and the cache directories if they are new."""
    for path in (CNI_STATE / "results").glob(f"{network}-*"):
        path.unlink()
    for directory in (CNI_STATE / "results", CNI_STATE):
        if str(directory) not in existed:
            with contextlib.suppress(OSError):
                directory.rmdir()


def restore_sysctls(sysctls: dict[str, str]) -> None:
    for key, value in sysctls.items():
        path = Path("/proc/sys") / key
        with contextlib.suppress(OSError):
            if path.read_text().strip() != value:
                path.write_text(value)
                _log(f"sysctl {key.replace('/', '.')} back to {value}")


def clean(snap: Snapshot) -> None:
    """Every step runs even when one before it failed (each failure is logged)."""
    fp = snap.footprint
    run_dir = Path(fp.run_dir)
    steps = [
        lambda: kill_owned_processes(run_dir),
        lambda: kill_shims(fp.containerd_socket),
        lambda: kill_cgroup_processes(fp.cgroup_root),
        lambda: unmount_below(fp.mount_roots),
        lambda: remove_netns(snap.netns, snap.netns_dir),
        lambda: remove_links(fp.bridge),
        lambda: clean_iptables(snap),
        lambda: clean_nft(snap.nft_tables),
        lambda: remove_cni_results(fp.cni_network, snap.cni_dirs),
        lambda: restore_sysctls(snap.sysctls),
        lambda: remove_cgroups(fp.cgroup_root),
    ]
    for step in steps:
        try:
            step()
        except Exception as exc:
            _log(f"cleanup step failed: {exc!r}")
    for name in ("pids.json", "snapshot.json"):
        with contextlib.suppress(OSError):
            (run_dir / name).unlink()
    state = Path(fp.containerd_socket).parent  # containerd's state: sockets, task bundles
    if not _mounts_below([str(state)]):
        shutil.rmtree(state, ignore_errors=True)
    _log("host restored")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    run_dir = Path(args[0])
    footprint = NodeFootprint(**json.loads((run_dir / "footprint.json").read_text()))
    snapshot_path = run_dir / "snapshot.json"
    if snapshot_path.exists():
        _log("a previous node was not cleaned up: cleaning up after it first")
        clean(load_snapshot(snapshot_path))
    snap = take_snapshot(footprint)
    tmp = snapshot_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(snap), indent=1))
    tmp.rename(snapshot_path)
    print("ready", flush=True)
    # Until the owner closes the pipe or dies.
    while sys.stdin.buffer.read(4096):
        pass
    clean(snap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
