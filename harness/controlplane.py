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
from typing import IO, Any

from harness.child_process import die_with_parent
from harness.k8s_binaries import Binaries
from harness.k8s_pki import Pki, make_pki
from harness.kubeconfig import write_kubeconfig
from harness.ports import free_ports

ADMIN_USER = "ebb-admin"
ADMIN_GROUP = "system:masters"
_START_TIMEOUT = 90.0
_STOP_TIMEOUT = 10.0


class ControlPlaneError(RuntimeError):
    """etcd or kube-apiserver did not start (the message carries the end of its log)."""


class CommandFailed(RuntimeError):
    """kubectl or helm exited non-zero; the message carries its stderr."""

    def __init__(self, argv: list[str], returncode: int, stdout: str, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {returncode}: {stderr.strip() or stdout.strip()}")
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class _Process:
    """One server process with its output in a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("wb")
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop it in order
            preexec_fn=die_with_parent,
        )

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
                self.popen.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()


def _wait_for(what: str, process: _Process, ready: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise ControlPlaneError(
                f"{process.name} exited with status {process.popen.returncode} before {what}; "
                f"end of {process.log_path}:\n{process.log_tail()}"
            )
        if ready():
            return
        time.sleep(0.1)
    raise ControlPlaneError(
        f"{process.name} not {what} after {timeout:.0f}s; end of {process.log_path}:\n{process.log_tail()}"
    )


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
    _processes: list[_Process] = field(repr=False)

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


def _start_etcd(binaries: Binaries, workdir: Path) -> tuple[_Process, str]:
    client_port, peer_port = free_ports(2)
    url, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    process = _Process(
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


def _start_apiserver(binaries: Binaries, workdir: Path, pki: Pki, etcd_url: str) -> tuple[_Process, str]:
    (port,) = free_ports(1)
    server = f"https://127.0.0.1:{port}"
    process = _Process(
        "kube-apiserver",
        [
            str(binaries.kube_apiserver),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={server}",
            f"--service-account-key-file={pki.sa_public_key}",
            f"--service-account-signing-key-file={pki.sa_private_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            # As envtest: without a controller-manager no namespace gets a default ServiceAccount, and
            # this admission plugin would then refuse every Pod.
            "--disable-admission-plugins=ServiceAccount",
            # The `kubernetes` Service endpoints would point at a loopback address, which the
            # Endpoints validation refuses; nothing here needs them.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ],
        workdir / "kube-apiserver.log",
    )
    return process, server


def start(workdir: Path, binaries: Binaries | None = None) -> ControlPlane:
    """Start etcd and kube-apiserver with data and logs in `workdir`, wait for /readyz, write the
    admin kubeconfig. Stops whatever it started if anything fails."""
    binaries = binaries or Binaries.from_cache()
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    pki = make_pki(workdir / "pki", admin_user=ADMIN_USER, admin_group=ADMIN_GROUP)
    processes: list[_Process] = []
    try:
        etcd, etcd_url = _start_etcd(binaries, workdir)
        processes.append(etcd)
        _wait_for("healthy", etcd, lambda: _etcd_healthy(etcd_url), _START_TIMEOUT)

        apiserver, server = _start_apiserver(binaries, workdir, pki, etcd_url)
        processes.append(apiserver)
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        _wait_for("ready (/readyz)", apiserver, lambda: _apiserver_ready(server, context), _START_TIMEOUT)
    except BaseException:
        for process in reversed(processes):
            process.stop()
        raise
    admin_kubeconfig = write_kubeconfig(
        workdir / "kubeconfig",
        server=server,
        ca_cert=pki.ca_cert,
        user=ADMIN_USER,
        client_cert=pki.admin_cert,
        client_key=pki.admin_key,
    )
    return ControlPlane(
        binaries=binaries,
        workdir=workdir,
        server=server,
        etcd_url=etcd_url,
        pki=pki,
        admin_kubeconfig=admin_kubeconfig,
        startup_seconds=time.monotonic() - began,
        _processes=processes,
    )


@contextlib.contextmanager
def running_control_plane(
    workdir: Path | None = None, binaries: Binaries | None = None
) -> Iterator[ControlPlane]:
    """A control plane for the duration of the block. Without `workdir` its data lives in a temporary
    directory that is deleted afterwards; a given `workdir` is kept (logs for a failed test)."""
    owned = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="ebb-controlplane-")) if workdir is None else workdir
    try:
        cp = start(directory, binaries)
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
