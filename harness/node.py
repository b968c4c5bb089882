"""A real Kubernetes node on this machine, for the cluster tier: the chart's pods run as users' pods do.

Stock kind cannot run here (no registry for its node image and preloaded images), so the harness starts
what a kind node runs, as host processes (docs/cluster-node.md, and what differs from kind):
containerd and runc from Debian, the control plane in its node mode (harness.controlplane.NodeMode:
etcd, kube-apiserver, kube-controller-manager, kube-scheduler), kubelet and kube-proxy of the same
Kubernetes pin (harness/node/build.sh), the Debian CNI plugins (bridge, host-local, portmap, firewall),
CoreDNS, and local-path-provisioner as the default StorageClass (kind's). The node's own images come from
harness.images as tarballs and are imported with `ctr -n k8s.io images import`; containerd's image
store is kept in `$EBB_CACHE/node/containerd`, so a cached run imports nothing. Ebb's images are pulled,
as users' nodes pull them: from the registries given to `running_cluster` (harness.registry), through
containerd's registry hosts configuration (`certs.d/<host>/hosts.toml`, containerd's docs/hosts.md).

The host is shared, so the node keeps to its own names: pods 10.244.0.0/24 on bridge `ebbcni0`,
Services 10.96.0.0/16, pod cgroups under `/ebb-node`, containerd's socket and state in /run/ebb-node,
free ports for kubelet and kube-proxy, and one node per machine at a time (flock on
/run/ebb-node.lock; a second run waits, bounded). harness.node_janitor, started before anything changes
the host, puts it back afterwards, also when the test process is killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from string import Template
from typing import IO, Any

import yaml

from harness.bounded import until
from harness.controlplane import CLUSTER_DOMAIN, ControlPlane, NodeMode, running_control_plane
from harness.images import BuiltImage
from harness.k8s_binaries import Binaries, cache_dir
from harness.node_binaries import NodeBinaries
from harness.node_janitor import NodeFootprint
from harness.ports import free_ports
from harness.server_process import ServerProcess, ServerStartError, wait_for

NODE_NAME = "ebb-node"
POD_CIDR = "10.244.0.0/24"
CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER_DNS_IP = "10.96.0.10"
BRIDGE = "ebbcni0"
CNI_NETWORK = "ebb-pods"
CGROUP_ROOT = "ebb-node"
NODE_CPU_WEIGHT = 8 * 1024  # cpu.shares: eight host processes' worth (_prepare_cgroups)
RUN_DIR = Path("/run/ebb-node")
LOCK_PATH = Path("/run/ebb-node.lock")
CNI_BIN = Path("/usr/lib/cni")
NODE_DIR = Path(__file__).parent / "node"

_LOCK_TIMEOUT = 900.0
_READY_TIMEOUT = 180.0
_TEARDOWN_TIMEOUT = 90.0
_JANITOR_TIMEOUT = 180.0

# What the node needs from the host, by the Debian package that provides it (mk/cluster.mk installs them).
HOST_PACKAGES = {
    "/usr/bin/containerd": "containerd",
    "/usr/bin/containerd-shim-runc-v2": "containerd",
    "/usr/bin/ctr": "containerd",
    "/usr/sbin/runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "/usr/lib/cni/firewall": "containernetworking-plugins",
    "/usr/sbin/iptables": "iptables",
    "/usr/sbin/conntrack": "conntrack",
    "/usr/sbin/debootstrap": "debootstrap",
    "/usr/sbin/dockerd": "docker.io",
}


class NodeError(ServerStartError):
    """The node cannot run here, or a part of it did not start (the message says which and why)."""


def check_host() -> None:
    """The node runs only as root on Linux with cgroup v1 and the Debian packages; a clear error otherwise."""
    if sys.platform != "linux":
        raise NodeError(f"the cluster tier's node runs on Linux only (this is {sys.platform})")
    if os.geteuid() != 0:
        raise NodeError("the cluster tier's node needs root (kubelet, containerd, iptables, mounts)")
    missing = sorted({pkg for path, pkg in HOST_PACKAGES.items() if not Path(path).exists()})
    if missing:
        raise NodeError(
            f"missing Debian packages {' '.join(missing)}: run `make cluster-packages` "
            f"(apt-get install {' '.join(missing)})"
        )
    if not Path("/sys/fs/cgroup/memory").is_dir():
        raise NodeError(
            "this node is configured for cgroup v1 (kubelet failCgroupV1: false, cgroupfs), and "
            "/sys/fs/cgroup/memory is not mounted: a cgroup v2 host needs another kubelet configuration"
        )


def host_ip() -> str:
    """The node's InternalIP: the source address of the default route, else the first global IPv4."""
    route = subprocess.run(["ip", "-4", "-o", "route", "get", "1.1.1.1"], capture_output=True, text=True)
    words = route.stdout.split()
    if route.returncode == 0 and "src" in words:
        return words[words.index("src") + 1]
    addrs = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True
    )
    for line in addrs.stdout.splitlines():
        return line.split()[3].split("/")[0]
    raise NodeError("no global IPv4 address on this machine for the node (ip -4 addr show)")


# --- exclusive use of the machine, and the janitor -------------------------------------------------------


@contextlib.contextmanager
def machine_lock(say: Callable[[str], None]) -> Iterator[int]:
    """One node per machine: the node's names (bridge, cgroups, chains) are fixed."""
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another node runs on this machine ({LOCK_PATH} is locked): waiting for it")
            try:
                until(
                    "the machine's node lock",
                    lambda: _locked(fd),
                    _LOCK_TIMEOUT,
                    1,
                    ignore=(BlockingIOError,),
                )
            except TimeoutError:
                raise NodeError(
                    f"another node has held {LOCK_PATH} for {_LOCK_TIMEOUT:.0f} s (a cluster tier "
                    "running in another clone?); try again when it has finished"
                ) from None
        yield fd
    finally:
        os.close(fd)


def _locked(fd: int) -> bool:
    """Take the exclusive lock now, or BlockingIOError."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return True


class Janitor:
    """harness.node_janitor, which restores the host when the pipe to it closes (or we die)."""

    def __init__(self, footprint: NodeFootprint, lock_fd: int) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        (RUN_DIR / "footprint.json").write_text(json.dumps(asdict(footprint), indent=1))
        (RUN_DIR / "pids.json").write_text("[]")
        self.log_path = RUN_DIR / "janitor.log"
        self._log: IO[bytes] = self.log_path.open("ab")
        self._pids: list[tuple[int, str]] = []
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "harness.node_janitor", str(RUN_DIR)],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives us: it cleans up after our death
            pass_fds=(lock_fd,),  # and holds the machine lock until it has
            cwd=Path(__file__).resolve().parents[1],
        )

        def ready() -> bool:
            if self.popen.poll() is not None:
                raise NodeError(f"the node janitor exited; {self.log_path}:\n{self.log_tail()}")
            return "ready" in self.log_path.read_text(errors="replace").splitlines()[-1:]

        try:
            until("the node janitor ready", ready, _JANITOR_TIMEOUT, 0.1)
        except TimeoutError:
            raise NodeError(f"the node janitor did not start; {self.log_path}:\n{self.log_tail()}") from None

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])

    def own(self, pid: int) -> None:
        """Record a process of the node, for the janitor to kill should we die."""
        with contextlib.suppress(OSError, IndexError):
            start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
            self._pids.append((pid, start))
            tmp = RUN_DIR / "pids.json.tmp"
            tmp.write_text(json.dumps(self._pids))
            tmp.rename(RUN_DIR / "pids.json")

    def finish(self) -> None:
        """Close the pipe: the janitor cleans up; wait for it (bounded)."""
        assert self.popen.stdin is not None
        self.popen.stdin.close()
        try:
            self.popen.wait(_JANITOR_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise NodeError(
                f"the node janitor has not finished after {_JANITOR_TIMEOUT:.0f} s; {self.log_path}:\n"
                f"{self.log_tail()}"
            ) from None
        finally:
            self._log.close()


# --- containerd ------------------------------------------------------------------------------------------


def containerd_root() -> Path:
    return cache_dir() / "node" / "containerd"


CONTAINERD_SOCKET = RUN_DIR / "containerd" / "containerd.sock"


def _registry_hosts(workdir: Path, registries: list[str]) -> Path:
    """containerd's hosts directory: plain HTTP to each local registry (host:port), pull and resolve."""
    certs_d = workdir / "certs.d"
    for host in registries:
        (certs_d / host).mkdir(parents=True, exist_ok=True)
        (certs_d / host / "hosts.toml").write_text(
            f'server = "http://{host}"\n\n[host."http://{host}"]\n  capabilities = ["pull", "resolve"]\n'
        )
    return certs_d


def _containerd_config(workdir: Path, sandbox_image: str, registries: list[str]) -> Path:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    config = f"""version = 2
root = "{containerd_root()}"
state = "{RUN_DIR / "containerd"}"
[grpc]
  address = "{CONTAINERD_SOCKET}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{containerd_root() / "opt"}"
[{cri}]
  sandbox_image = "{sandbox_image}"
  # Root lacks CAP_SYS_RESOURCE here: negative oom_score_adj (sandboxes get -998) would fail every pod.
  restrict_oom_score_adj = true
  [{cri}.registry]
    config_path = "{_registry_hosts(workdir, registries)}"
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{workdir / "cni" / "net.d"}"
  [{cri}.containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
"""
    path = workdir / "containerd.toml"
    path.write_text(config)
    return path


def _cni_config(workdir: Path) -> None:
    """bridge + host-local for one static /24, portmap, and the firewall plugin: it accepts the pods'
    forwarded traffic even where a FORWARD policy is DROP (dockerd sets one)."""
    net_d = workdir / "cni" / "net.d"
    net_d.mkdir(parents=True, exist_ok=True)
    conf = {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(workdir / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "firewall", "backend": "iptables"},
        ],
    }
    (net_d / "10-ebb-pods.conflist").write_text(json.dumps(conf, indent=2))


def ctr(*args: str, timeout: float = 300, stdin: IO[bytes] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", "--address", str(CONTAINERD_SOCKET), "--namespace", "k8s.io", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# Repositories imported by earlier versions of the harness and pulled from a registry now.
RETIRED_REPOSITORIES = ("localhost/ebb-operator", "localhost/ebb-broker")


def import_images(images: dict[str, BuiltImage], say: Callable[[str], None]) -> None:
    """Import what containerd lacks; remove the superseded tags of the same repositories."""
    present = set(ctr("images", "ls", "-q").stdout.split())
    for image in images.values():
        if image.ref in present:
            continue
        began = time.monotonic()
        with image.tarball.open("rb") as tar:
            proc = ctr("images", "import", "-", stdin=tar, timeout=900)
        if proc.returncode != 0:
            raise NodeError(f"ctr images import {image.tarball} failed: {proc.stderr.strip()}")
        say(f"imported {image.ref} ({time.monotonic() - began:.0f} s)")
    wanted = {i.ref for i in images.values()}
    repositories = {i.ref.rsplit(":", 1)[0] for i in images.values()} | set(RETIRED_REPOSITORIES)
    stale = [ref for ref in present if ref.rsplit(":", 1)[0] in repositories and ref not in wanted]
    if stale:  # --sync: their content and snapshots are garbage-collected now, not at some later GC
        ctr("images", "rm", "--sync", *stale)


def prune_pulled_images(prefix: str, wanted: list[str]) -> None:
    """Remove the images pulled from a registry (names starting with `prefix`) other than `wanted`
    (REF:TAG@DIGEST): kubelet's image garbage collection is off (imageGCHighThresholdPercent 100), and
    each code change pulls a new operator image."""
    digests = {ref.rsplit("@", 1)[-1] for ref in wanted}
    listed = ctr("images", "ls").stdout.splitlines()[1:]
    stale = [line.split()[0] for line in listed if line.startswith(prefix) and line.split()[2] not in digests]
    if stale:
        ctr("images", "rm", "--sync", *stale)


# --- kubelet and kube-proxy ------------------------------------------------------------------------------


def _kubelet_config(workdir: Path, cp: ControlPlane, port: int, healthz_port: int) -> Path:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # The machines have cgroup v1 and no systemd; containerd 1.6 cannot report its cgroup driver
        # (no RuntimeConfig RPC): kubelet falls back to this one (removed in 1.38, docs/cluster-node.md).
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCKET}",
        "failSwapOn": False,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(cp.pki.ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "readOnlyPort": 0,
        "port": port,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [CLUSTER_DNS_IP],
        "resolvConf": "/etc/resolv.conf",
        "podLogsDir": str(workdir / "pod-logs"),
        "volumePluginDir": str(workdir / "volume-plugins"),
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
        # Never garbage-collect the imported images (they cannot be pulled again).
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
    }
    path = workdir / "kubelet.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _prepare_cgroups() -> None:
    """kubelet's cgroupRoot must exist in every hierarchy; cpuset needs its cpus and mems filled in.

    Its CPU weight: a cgroup competes with the root's processes as one of them (weight 1024), so by
    default all of the node's pods together would get the CPU share of a single host process. kubelet
    gives `kubepods` 1024 per CPU; here the node gets NODE_CPU_WEIGHT, what its busy threads (the Spark
    driver's, executor's, the operator's) would weigh if they ran on the host as the other tiers' do."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        if hierarchy.is_symlink() or not hierarchy.is_dir() or hierarchy.name == "unified":
            continue
        root = hierarchy / CGROUP_ROOT
        root.mkdir(exist_ok=True)
        if hierarchy.name == "cpuset":
            for key in ("cpuset.cpus", "cpuset.mems"):
                (root / key).write_text((hierarchy / key).read_text())
        if (root / "cpu.shares").exists():
            (root / "cpu.shares").write_text(str(NODE_CPU_WEIGHT))


def _kube_proxy_config(workdir: Path, cp: ControlPlane) -> Path:
    metrics, healthz = free_ports(2)
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(cp.component_kubeconfig("kube-proxy"))},
        "clusterCIDR": CLUSTER_CIDR,
        "hostnameOverride": NODE_NAME,
        "metricsBindAddress": f"127.0.0.1:{metrics}",
        "healthzBindAddress": f"127.0.0.1:{healthz}",
        # 0: leave the host's conntrack sysctls as they are.
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    path = workdir / "kube-proxy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


# --- add-ons ---------------------------------------------------------------------------------------------


def _coredns_manifest(image: str) -> str:
    text = (NODE_DIR / "manifests" / "coredns.yaml").read_text()
    return Template(text).substitute(IMAGE=image, CLUSTER_DNS_IP=CLUSTER_DNS_IP)


def _local_path_manifest(binaries: NodeBinaries, image: str, helper_image: str, data_dir: Path) -> str:
    """The module's deploy/local-path-storage.yaml with local images, a data directory of the node's,
    and its StorageClass made the default (kind's `standard` class is), so the chart needs no value."""
    docs = [d for d in yaml.safe_load_all(binaries.local_path_manifest.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            container["image"], container["imagePullPolicy"] = image, "Never"
        elif doc["kind"] == "StorageClass":
            doc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        elif doc["kind"] == "ConfigMap":
            config = json.loads(doc["data"]["config.json"])
            config["nodePathMap"][0]["paths"] = [str(data_dir)]
            doc["data"]["config.json"] = json.dumps(config)
            helper = yaml.safe_load(doc["data"]["helperPod.yaml"])
            helper["spec"]["containers"][0]["image"] = helper_image
            helper["spec"]["containers"][0]["imagePullPolicy"] = "Never"
            doc["data"]["helperPod.yaml"] = yaml.safe_dump(helper)
    return yaml.safe_dump_all(docs)


# --- the cluster -----------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """A control plane and its node, with the images the node holds."""

    cp: ControlPlane
    workdir: Path
    host_ip: str
    images: dict[str, BuiltImage]
    binaries: NodeBinaries
    janitor: Janitor
    processes: list[ServerProcess]

    def kubectl(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.cp.kubectl(*args, **kwargs)

    def kubectl_json(self, *args: str) -> Any:
        return self.cp.kubectl_json(*args)

    def helm(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.cp.helm(*args, **kwargs)

    def own(self, process: ServerProcess) -> None:
        """A process started beside the node (the Spark operator): killed by the janitor should we die."""
        self.janitor.own(process.pid)

    def wait_ready(self, kind: str, name: str, namespace: str, timeout: float = _READY_TIMEOUT) -> None:
        """`kubectl rollout status` (Deployment, StatefulSet), bounded; the pods' state on failure."""
        proc = self.kubectl(
            "rollout", "status", f"{kind}/{name}", "-n", namespace, f"--timeout={timeout:.0f}s",
            check=False, timeout=timeout + 30,
        )  # fmt: skip
        if proc.returncode != 0:
            raise NodeError(
                f"{kind}/{name} in {namespace} not ready after {timeout:.0f} s: {proc.stderr.strip()}\n"
                f"{self.describe_pods(namespace)}"
            )

    def describe_pods(self, namespace: str) -> str:
        pods = self.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
        events = self.kubectl(
            "get", "events", "-n", namespace, "--sort-by=.lastTimestamp", check=False
        ).stdout.splitlines()[-15:]
        return pods + "\n".join(events)


def _wait_node_ready(cp: ControlPlane, kubelet: ServerProcess) -> None:
    def ready() -> bool:
        proc = cp.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if proc.returncode != 0:
            return False
        conditions = json.loads(proc.stdout).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for(f"Ready (node {NODE_NAME})", kubelet, ready, _READY_TIMEOUT, NodeError)


def _stop_workloads(cluster: Cluster, say: Callable[[str], None]) -> None:
    """Cordon the node and delete every pod, so kubelet stops the containers and tears down their
    network (CNI DEL) itself; what is left after the bound is the janitor's."""
    cp = cluster.cp
    cp.kubectl("cordon", NODE_NAME, check=False)
    cp.kubectl(
        "delete", "pods", "--all", "--all-namespaces", "--force", "--grace-period=0", "--wait=false",
        check=False, timeout=60,
    )  # fmt: skip

    def stopped() -> bool:
        tasks = ctr("tasks", "ls", "-q", timeout=30)
        return tasks.returncode != 0 or not tasks.stdout.split()

    try:
        until("every container stopped", stopped, _TEARDOWN_TIMEOUT, 1)
    except TimeoutError:
        say(f"containers still running after {_TEARDOWN_TIMEOUT:.0f} s: the janitor kills them")


@contextlib.contextmanager
def running_cluster(
    workdir: Path,
    images: dict[str, BuiltImage],
    *,
    say: Callable[[str], None] = print,
    k8s_binaries: Binaries | None = None,
    binaries: NodeBinaries | None = None,
    registries: list[str] | None = None,
) -> Iterator[Cluster]:
    """A control plane with one node, CoreDNS and the default StorageClass, for the block; `images`
    (harness.images.ensure_node_images) are imported into the node, images of `registries` (host:port,
    plain HTTP) are pulled from them. Each step's time is reported through `say`. Everything is stopped
    and the host restored afterwards."""
    check_host()
    binaries = binaries or NodeBinaries.from_cache()
    k8s_binaries = k8s_binaries or Binaries.from_cache()
    ip = host_ip()
    workdir.mkdir(parents=True, exist_ok=True)

    def step(what: str, began: float) -> None:
        say(f"{what}: {time.monotonic() - began:.1f} s")

    with machine_lock(say) as lock_fd:
        began = time.monotonic()
        kubelet_root = workdir / "kubelet"
        footprint = NodeFootprint(
            run_dir=str(RUN_DIR),
            containerd_socket=str(CONTAINERD_SOCKET),
            mount_roots=[str(kubelet_root), str(RUN_DIR), str(containerd_root())],
            bridge=BRIDGE,
            cni_network=CNI_NETWORK,
            pod_cidr=POD_CIDR,
            cgroup_root=CGROUP_ROOT,
        )
        janitor = Janitor(footprint, lock_fd)
        step("janitor ready (host state recorded)", began)
        processes: list[ServerProcess] = []
        try:
            began = time.monotonic()
            _cni_config(workdir)
            containerd_root().mkdir(parents=True, exist_ok=True)
            config = _containerd_config(workdir, images["pause"].ref, registries or [])
            containerd = ServerProcess(
                "containerd",
                ["containerd", "--config", str(config)],
                workdir / "containerd.log",
                stop_timeout=20,
            )
            processes.append(containerd)
            janitor.own(containerd.pid)
            wait_for(
                "serving",
                containerd,
                lambda: ctr("version", timeout=10).returncode == 0,
                _READY_TIMEOUT,
                NodeError,
            )
            step("containerd", began)
            began = time.monotonic()
            import_images(images, say)
            step("images in containerd", began)

            began = time.monotonic()
            node_mode = NodeMode(host_ip=ip, node_name=NODE_NAME, node_binaries=binaries.bin)
            with running_control_plane(workdir / "controlplane", k8s_binaries, node_mode) as cp:
                for pid in cp.pids:
                    janitor.own(pid)
                step("control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)", began)
                cluster = Cluster(cp, workdir, ip, images, binaries, janitor, processes)
                try:
                    began = time.monotonic()
                    _prepare_cgroups()
                    kubelet_port, healthz_port = free_ports(2, "0.0.0.0")
                    kubelet = ServerProcess(
                        "kubelet",
                        [
                            str(binaries["kubelet"]),
                            f"--config={_kubelet_config(workdir, cp, kubelet_port, healthz_port)}",
                            f"--kubeconfig={cp.component_kubeconfig('kubelet')}",
                            f"--root-dir={kubelet_root}",
                            f"--hostname-override={NODE_NAME}",
                            f"--node-ip={ip}",
                            "--v=1",
                        ],
                        workdir / "kubelet.log",
                        stop_timeout=20,
                    )
                    processes.append(kubelet)
                    janitor.own(kubelet.pid)
                    proxy = ServerProcess(
                        "kube-proxy",
                        [str(binaries["kube-proxy"]), f"--config={_kube_proxy_config(workdir, cp)}"],
                        workdir / "kube-proxy.log",
                    )
                    processes.append(proxy)
                    janitor.own(proxy.pid)
                    _wait_node_ready(cp, kubelet)
                    step(f"node {NODE_NAME} Ready (kubelet, kube-proxy)", began)

                    began = time.monotonic()
                    (workdir / "local-path").mkdir(exist_ok=True)
                    cp.kubectl("apply", "-f", "-", stdin=_coredns_manifest(images["coredns"].ref))
                    cp.kubectl(
                        "apply",
                        "-f",
                        "-",
                        stdin=_local_path_manifest(
                            binaries,
                            images["local-path-provisioner"].ref,
                            images["debian"].ref,
                            workdir / "local-path",
                        ),
                    )
                    cluster.wait_ready("deployment", "coredns", "kube-system")
                    cluster.wait_ready("deployment", "local-path-provisioner", "local-path-storage")
                    step("CoreDNS and local-path-provisioner ready", began)
                    yield cluster
                finally:
                    began = time.monotonic()
                    _stop_workloads(cluster, say)
                    for process in reversed(processes[1:]):  # kube-proxy, kubelet (containerd below)
                        process.stop()
                    del processes[1:]
                    step("pods stopped, kubelet and kube-proxy stopped", began)
                    began = time.monotonic()
            step("control plane stopped", began)
        finally:
            began = time.monotonic()
            for process in reversed(processes):
                process.stop()
            janitor.finish()
            step("containerd stopped, host restored (janitor)", began)
            shutil.rmtree(workdir / "controlplane" / "etcd", ignore_errors=True)
