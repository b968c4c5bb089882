"""A real Kubernetes control plane (etcd + kube-apiserver) on 127.0.0.1, started the way envtest does.

What a test gets is the API a user's cluster serves: RBAC authorization, an admin in `system:masters`
(client certificate), service-account token signing so TokenRequest (`kubectl create token`) works and
ServiceAccount tokens authenticate, CRDs with CEL validation and the status subresource, core/v1 Events.
What it lacks is every controller (no kube-controller-manager, scheduler or kubelet): no garbage
collection of owner references, deleted namespaces stay Terminating, no default ServiceAccount per
namespace, no Pods ever run. Tests start the broker and the operator as local processes instead.

Use it as a context manager (`with running_control_plane() as cp:`), as the session fixture
`control_plane` (tests/plugins/controlplane.py), or in the foreground with `make controlplane`.
Every process is stopped on exit, and dies with its parent even if the parent is killed -9.

With a node (`NodeMode`, used by harness.node for the cluster tier) it is a real cluster's control plane
(docs/cluster-node.md): kube-apiserver listens on every address and advertises the node's, so pods reach
it through the `kubernetes` Service; its certificate names that Service; the ServiceAccount admission
plugin is on; authorization is Node,RBAC; it reaches kubelets by their InternalIP with a client
certificate of its own; and kube-controller-manager (ServiceAccounts, the root CA ConfigMap, garbage
collection, the workload controllers, the certificate signer) and kube-scheduler run beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.k8s_binaries import Binaries
from harness.k8s_pki import Pki, make_pki
from harness.kubeconfig import write_kubeconfig
from harness.ports import free_ports
from harness.server_process import ServerProcess, ServerStartError, wait_for

ADMIN_USER = "ebb-admin"
ADMIN_GROUP = "system:masters"
SERVICE_CIDR = "10.96.0.0/16"  # kubeadm's default; the `kubernetes` Service gets its first address
KUBERNETES_SERVICE_IP = "10.96.0.1"
CLUSTER_DOMAIN = "cluster.local"
_START_TIMEOUT = 90.0


class ControlPlaneError(ServerStartError):
    """etcd or kube-apiserver did not start (the message carries the end of its log)."""


class CommandFailed(RuntimeError):
    """kubectl or helm exited non-zero; the message carries its stderr."""

    def __init__(self, argv: list[str], returncode: int, stdout: str, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {returncode}: {stderr.strip() or stdout.strip()}")
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


@dataclass(frozen=True)
class NodeMode:
    """A control plane for a real node: the node's address and name, and where kube-controller-manager
    and kube-scheduler were built (harness/node/build.sh)."""

    host_ip: str
    node_name: str
    node_binaries: Path

    def client_certificates(self) -> dict[str, tuple[str, list[str]]]:
        """Each component's user and groups (the names kubeadm gives them; RBAC's bootstrap roles and the
        Node authorizer know these users)."""
        return {
            "kube-controller-manager": ("system:kube-controller-manager", []),
            "kube-scheduler": ("system:kube-scheduler", []),
            "kube-proxy": ("system:kube-proxy", []),
            "kubelet": (f"system:node:{self.node_name}", ["system:nodes"]),
            "apiserver-kubelet-client": ("kube-apiserver-kubelet-client", ["system:masters"]),
        }


def _etcd_healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return bool(json.load(resp).get("health") == "true")
    except (OSError, ValueError):
        return False


def _apiserver_ready(server: str, context: ssl.SSLContext) -> bool:
    # /readyz turns 200 only once every post-start hook has run, among them the RBAC bootstrap roles
    # and the system namespaces: from then on the API behaves as a freshly initialised cluster's.
    try:
        with urllib.request.urlopen(f"{server}/readyz", timeout=2, context=context) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver and the files a client needs to reach it."""

    binaries: Binaries
    workdir: Path
    server: str
    etcd_url: str
    pki: Pki
    admin_kubeconfig: Path
    startup_seconds: float
    _processes: list[ServerProcess] = field(repr=False)
    node: NodeMode | None = None

    @property
    def port(self) -> int:
        return int(self.server.rsplit(":", 1)[1])

    def component_kubeconfig(self, name: str) -> Path:
        """The kubeconfig of a node component (kubelet, kube-proxy, ...) with its own client certificate."""
        cert, key = self.pki.clients[name]
        path = self.workdir / "kubeconfigs" / f"{name}.yaml"
        if not path.exists():
            user = self.node.client_certificates()[name][0] if self.node else name
            write_kubeconfig(
                path,
                server=self.server,
                ca_cert=self.pki.ca_cert,
                user=user,
                client_cert=cert,
                client_key=key,
            )
        return path

    def env(self, kubeconfig: Path | None = None) -> dict[str, str]:
        """Environment for a child process (kopf, the operator, helm): KUBECONFIG set, kubectl and helm
        first on PATH, helm's cache and config inside the work directory instead of the user's home."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(kubeconfig or self.admin_kubeconfig)
        env["PATH"] = f"{self.binaries.directory}{os.pathsep}{env.get('PATH', '')}"
        for var, sub in (
            ("HELM_CACHE_HOME", "cache"),
            ("HELM_CONFIG_HOME", "config"),
            ("HELM_DATA_HOME", "data"),
        ):
            env[var] = str(self.workdir / "helm" / sub)
        return env

    def _run(
        self,
        tool: Path,
        args: tuple[str, ...],
        *,
        stdin: str | None,
        kubeconfig: Path | None,
        check: bool,
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(tool), *args]
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, env=self.env(kubeconfig), timeout=timeout
        )
        if check and proc.returncode != 0:
            raise CommandFailed(argv, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        kubeconfig: Path | None = None,
        check: bool = True,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as the admin (or as the user of `kubeconfig`); raise CommandFailed if it fails
        and `check` is true."""
        return self._run(
            self.binaries.kubectl, args, stdin=stdin, kubeconfig=kubeconfig, check=check, timeout=timeout
        )

    def kubectl_json(self, *args: str, kubeconfig: Path | None = None) -> Any:
        """`kubectl ... -o json`, parsed (JSON of the API's objects, hence Any)."""
        return json.loads(self.kubectl(*args, "-o", "json", kubeconfig=kubeconfig).stdout)

    def helm(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """Run helm against this control plane."""
        return self._run(
            self.binaries.helm, args, stdin=None, kubeconfig=kubeconfig, check=check, timeout=timeout
        )

    def service_account_kubeconfig(
        self, namespace: str, name: str, *, duration: str = "2h", path: Path | None = None
    ) -> Path:
        """A kubeconfig that authenticates as ServiceAccount `namespace/name` with a bound token from
        TokenRequest, as a Pod running under that ServiceAccount would (the ServiceAccount must exist;
        what it may do is whatever its RoleBindings grant)."""
        token = self.kubectl(
            "create", "token", name, "--namespace", namespace, "--duration", duration
        ).stdout.strip()
        path = path or self.workdir / "kubeconfigs" / f"sa-{namespace}-{name}.yaml"
        return write_kubeconfig(
            path,
            server=self.server,
            ca_cert=self.pki.ca_cert,
            user=f"system:serviceaccount:{namespace}:{name}",
            token=token,
            namespace=namespace,
        )

    @property
    def pids(self) -> list[int]:
        """Process ids of etcd and kube-apiserver, in start order."""
        return [p.popen.pid for p in self._processes]

    def running(self) -> bool:
        return all(p.running() for p in self._processes)

    def stop(self) -> None:
        """Stop kube-apiserver, then etcd (reverse start order). Safe to call twice."""
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()


def _start_etcd(binaries: Binaries, workdir: Path) -> tuple[ServerProcess, str]:
    client_port, peer_port = free_ports(2)
    url, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    process = ServerProcess(
        "etcd",
        [
            str(binaries.etcd),
            "--name=default",
            f"--data-dir={workdir / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            # Test data: envtest passes this too. A crash loses the whole cluster, never a user's data.
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
        workdir / "etcd.log",
    )
    return process, url


def _apiserver_mode_flags(pki: Pki, node: NodeMode | None) -> list[str]:
    if node is None:
        return [
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            # As envtest: without a controller-manager no namespace gets a default ServiceAccount, and
            # this admission plugin would then refuse every Pod.
            "--disable-admission-plugins=ServiceAccount",
            # The `kubernetes` Service endpoints would point at a loopback address, which the
            # Endpoints validation refuses; nothing here needs them.
            "--endpoint-reconciler-type=none",
        ]
    cert, key = pki.clients["apiserver-kubelet-client"]
    return [
        # Pods reach the API through the `kubernetes` Service, whose endpoint is this address.
        "--bind-address=0.0.0.0",
        f"--advertise-address={node.host_ip}",
        "--authorization-mode=Node,RBAC",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--kubelet-client-certificate={cert}",
        f"--kubelet-client-key={key}",
        # `kubectl logs/exec`: the node's name is not in any DNS the API server uses.
        "--kubelet-preferred-address-types=InternalIP,Hostname",
    ]


def _start_apiserver(
    binaries: Binaries, workdir: Path, pki: Pki, etcd_url: str, node: NodeMode | None = None
) -> tuple[ServerProcess, str]:
    (port,) = free_ports(1, "0.0.0.0" if node else "127.0.0.1")
    server = f"https://127.0.0.1:{port}"
    process = ServerProcess(
        "kube-apiserver",
        [
            str(binaries.kube_apiserver),
            f"--etcd-servers={etcd_url}",
            *_apiserver_mode_flags(pki, node),
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-issuer={server}",
            f"--service-account-key-file={pki.sa_public_key}",
            f"--service-account-signing-key-file={pki.sa_private_key}",
            "--allow-privileged=true",
            "--profiling=false",
        ],
        workdir / "kube-apiserver.log",
    )
    return process, server


def _healthz(port: int) -> Callable[[], bool]:
    """kube-controller-manager's and kube-scheduler's /healthz (self-signed serving certificates)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=context) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    return ready


def _start_controllers(cp: ControlPlane, node: NodeMode) -> list[ServerProcess]:
    """kube-controller-manager and kube-scheduler, each under its own user, on free ports of 127.0.0.1."""
    kcm_port, scheduler_port = free_ports(2)
    kcm_config, scheduler_config = (
        cp.component_kubeconfig(n) for n in ("kube-controller-manager", "kube-scheduler")
    )
    assert cp.pki.ca_key is not None
    kcm = ServerProcess(
        "kube-controller-manager",
        [
            str(node.node_binaries / "kube-controller-manager"),
            f"--kubeconfig={kcm_config}",
            f"--authentication-kubeconfig={kcm_config}",
            f"--authorization-kubeconfig={kcm_config}",
            f"--service-account-private-key-file={cp.pki.sa_private_key}",
            f"--root-ca-file={cp.pki.ca_cert}",
            "--use-service-account-credentials=true",
            f"--cluster-signing-cert-file={cp.pki.ca_cert}",
            f"--cluster-signing-key-file={cp.pki.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # The node's pod range is fixed by its CNI configuration (harness.node).
            "--allocate-node-cidrs=false",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={kcm_port}",
            f"--cert-dir={cp.workdir / 'kube-controller-manager-certs'}",
            "--profiling=false",
        ],
        cp.workdir / "kube-controller-manager.log",
    )
    scheduler = ServerProcess(
        "kube-scheduler",
        [
            str(node.node_binaries / "kube-scheduler"),
            f"--kubeconfig={scheduler_config}",
            f"--authentication-kubeconfig={scheduler_config}",
            f"--authorization-kubeconfig={scheduler_config}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={scheduler_port}",
            f"--cert-dir={cp.workdir / 'kube-scheduler-certs'}",
            "--profiling=false",
        ],
        cp.workdir / "kube-scheduler.log",
    )
    started = [kcm, scheduler]
    try:
        wait_for("healthy (/healthz)", kcm, _healthz(kcm_port), _START_TIMEOUT, ControlPlaneError)
        wait_for("healthy (/healthz)", scheduler, _healthz(scheduler_port), _START_TIMEOUT, ControlPlaneError)
    except BaseException:
        for process in reversed(started):
            process.stop()
        raise
    return started


def start(workdir: Path, binaries: Binaries | None = None, node: NodeMode | None = None) -> ControlPlane:
    """Start etcd and kube-apiserver with data and logs in `workdir`, wait for /readyz, write the
    admin kubeconfig; with `node`, in a real node's mode and with kube-controller-manager and
    kube-scheduler. Stops whatever it started if anything fails."""
    binaries = binaries or Binaries.from_cache()
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    if node is None:
        pki = make_pki(workdir / "pki", admin_user=ADMIN_USER, admin_group=ADMIN_GROUP)
    else:
        service = ["kubernetes", "kubernetes.default", "kubernetes.default.svc"]
        pki = make_pki(
            workdir / "pki",
            admin_user=ADMIN_USER,
            admin_group=ADMIN_GROUP,
            serving_ips=[KUBERNETES_SERVICE_IP, node.host_ip],
            serving_names=[*service, f"kubernetes.default.svc.{CLUSTER_DOMAIN}"],
            clients=node.client_certificates(),
            write_ca_key=True,
        )
    processes: list[ServerProcess] = []
    try:
        etcd, etcd_url = _start_etcd(binaries, workdir)
        processes.append(etcd)
        wait_for("healthy", etcd, lambda: _etcd_healthy(etcd_url), _START_TIMEOUT, ControlPlaneError)

        apiserver, server = _start_apiserver(binaries, workdir, pki, etcd_url, node)
        processes.append(apiserver)
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        wait_for(
            "ready (/readyz)",
            apiserver,
            lambda: _apiserver_ready(server, context),
            _START_TIMEOUT,
            ControlPlaneError,
        )
        admin_kubeconfig = write_kubeconfig(
            workdir / "kubeconfig",
            server=server,
            ca_cert=pki.ca_cert,
            user=ADMIN_USER,
            client_cert=pki.admin_cert,
            client_key=pki.admin_key,
        )
        cp = ControlPlane(
            binaries=binaries,
            workdir=workdir,
            server=server,
            etcd_url=etcd_url,
            pki=pki,
            admin_kubeconfig=admin_kubeconfig,
            startup_seconds=0.0,
            _processes=processes,
            node=node,
        )
        if node is not None:
            processes.extend(_start_controllers(cp, node))
    except BaseException:
        for process in reversed(processes):
            process.stop()
        raise
    cp.startup_seconds = time.monotonic() - began
    return cp


@contextlib.contextmanager
def running_control_plane(
    workdir: Path | None = None, binaries: Binaries | None = None, node: NodeMode | None = None
) -> Iterator[ControlPlane]:
    """A control plane for the duration of the block. Without `workdir` its data lives in a temporary
    directory that is deleted afterwards; a given `workdir` is kept (logs for a failed test)."""
    owned = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="ebb-controlplane-")) if workdir is None else workdir
    try:
        cp = start(directory, binaries, node)
        try:
            yield cp
        finally:
            cp.stop()
    finally:
        if owned:
            shutil.rmtree(directory, ignore_errors=True)


def _print_usage(cp: ControlPlane, out: Callable[[str], None]) -> None:
    out(f"control plane ready in {cp.startup_seconds:.1f}s: kube-apiserver {cp.server}, etcd {cp.etcd_url}")
    out(f"kubeconfig (admin, system:masters): {cp.admin_kubeconfig}")
    out("in another shell:")
    out(f"  export KUBECONFIG={cp.admin_kubeconfig}")
    out(f"  export PATH={cp.binaries.directory}:$PATH   # kubectl and helm of the same build")
    out("  kubectl get namespaces")
    out(f"logs: {cp.workdir}/kube-apiserver.log, {cp.workdir}/etcd.log")
    out("Ctrl-C stops it and deletes its data.")


def main() -> int:
    """`make controlplane`: run in the foreground until Ctrl-C (or SIGTERM), then clean up."""

    def on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    print("==> starting etcd and kube-apiserver on 127.0.0.1", flush=True)
    try:
        with running_control_plane() as cp:
            _print_usage(cp, lambda line: print(line, flush=True))
            while cp.running():
                time.sleep(1)
            print("==> a control-plane process exited on its own", file=sys.stderr)
            for process in cp._processes:
                if not process.running():
                    print(f"end of {process.log_path}:\n{process.log_tail()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("\n==> control plane stopped", flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main())
