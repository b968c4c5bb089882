"""A real OCI registry on 127.0.0.1: CNCF Distribution's `registry` (harness/node/build.sh builds it from the
Go module proxy), for the cluster tier to install Ebb from, as users install it from theirs.

Its storage is kept in `$EBB_CACHE/registry/storage`, and it listens on the same port from run to run
while that port is free (`$EBB_CACHE/registry/port`): a push then finds the layers of earlier runs there
and uploads only what changed (Docker's push looks a layer up by the registry and repository it last
pushed it to). Plain HTTP on the loopback, which Docker, containerd (through hosts.toml) and Helm
(`--plain-http`) accept for 127.0.0.1. Its access log names every client that fetched a manifest or a
blob, with its User-Agent: how a test sees that containerd pulled.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.k8s_binaries import cache_dir
from harness.node_binaries import NODE_DIR, _versions
from harness.ports import free_port
from harness.server_process import ServerProcess, ServerStartError, wait_for

_READY_TIMEOUT = 30.0
_GC_TIMEOUT = 300.0


class RegistryMissing(RuntimeError):
    """The registry binary has not been built on this machine."""


def registry_version() -> str:
    return _versions(NODE_DIR / "versions.env")["REGISTRY_VERSION"]


def registry_binary() -> Path:
    path = cache_dir() / "registry" / registry_version().removeprefix("v") / "registry"
    if not path.exists():
        raise RegistryMissing(
            f"the registry {registry_version()} is not built ({path}): run `make harness-node` "
            "(harness/node/build.sh builds it from the Go module proxy)"
        )
    return path


def _port(state: Path) -> int:
    """The port of the last run if it is free, else a new one (remembered for the next run)."""
    with contextlib.suppress(OSError, ValueError):
        port = int(state.read_text())
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
        return port
    port = free_port()
    state.write_text(str(port))
    return port


@dataclass(frozen=True)
class Registry:
    host: str  # 127.0.0.1:PORT, the name images and charts are pushed to and pulled from
    process: ServerProcess

    @property
    def access_log(self) -> Path:
        return self.process.log_path

    def requests_by(self, user_agent: str) -> list[str]:
        """The access log lines of reads (GET, or HEAD: containerd resolves a reference it has the content
        of with a HEAD of its manifest) whose User-Agent contains `user_agent`."""
        lines = self.access_log.read_text(errors="replace").splitlines()
        return [
            line for line in lines if user_agent in line and ('"GET /v2/' in line or '"HEAD /v2/' in line)
        ]


def _answers(host: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}/v2/", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def running_registry(workdir: Path) -> Iterator[Registry]:
    """The registry for the block, its log in `workdir`."""
    root = cache_dir() / "registry"
    (root / "storage").mkdir(parents=True, exist_ok=True)
    host = f"127.0.0.1:{_port(root / 'port')}"
    config = {
        "version": 0.1,
        "log": {"level": "info", "formatter": "text", "accesslog": {"disabled": False}},
        "storage": {
            "filesystem": {"rootdirectory": str(root / "storage")},
            "delete": {"enabled": True},
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": {"addr": host},
    }
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "registry.yaml"
    config_path.write_text(yaml.safe_dump(config))
    # What earlier runs pushed and this one re-tags (every code change makes a new operator image) goes
    # first: the registry must not serve while it collects.
    with (workdir / "garbage-collect.log").open("wb") as log:
        subprocess.run(
            [str(registry_binary()), "garbage-collect", "--delete-untagged", str(config_path)],
            stdout=log, stderr=subprocess.STDOUT, timeout=_GC_TIMEOUT, check=False,
        )  # fmt: skip
    argv = [str(registry_binary()), "serve", str(config_path)]
    process = ServerProcess("registry", argv, workdir / "registry.log")
    try:
        wait_for("serving /v2/", process, lambda: _answers(host), _READY_TIMEOUT, ServerStartError)
        yield Registry(host, process)
    finally:
        process.stop()
