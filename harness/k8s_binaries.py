"""Where `make harness-k8s` (harness/k8s/build.sh) put kube-apiserver, etcd, kubectl and helm."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

BUILD_DIR = Path(__file__).parent / "k8s"


class BinariesMissing(RuntimeError):
    """The control-plane binaries of the pinned versions have not been built on this machine."""


def _versions() -> dict[str, str]:
    versions = {}
    for line in (BUILD_DIR / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            versions[key] = value
    return versions


def cache_dir() -> Path:
    return Path(os.environ.get("EBB_CACHE") or Path.home() / ".cache" / "ebb")


def pin() -> str:
    """The cache key, computed exactly as build.sh computes it."""
    v = _versions()
    return (
        f"{v['KUBERNETES_VERSION'].removeprefix('v')}"
        f"-etcd{v['ETCD_VERSION'].removeprefix('v')}"
        f"-helm{v['HELM_VERSION'].removeprefix('v')}"
    )


def kubernetes_version() -> str:
    return _versions()["KUBERNETES_VERSION"]


def helm_version() -> str:
    return _versions()["HELM_VERSION"]


@dataclass(frozen=True)
class Binaries:
    directory: Path

    @property
    def kube_apiserver(self) -> Path:
        return self.directory / "kube-apiserver"

    @property
    def etcd(self) -> Path:
        return self.directory / "etcd"

    @property
    def kubectl(self) -> Path:
        return self.directory / "kubectl"

    @property
    def helm(self) -> Path:
        return self.directory / "helm"

    @classmethod
    def from_cache(cls) -> Binaries:
        """The binaries of the pinned versions, or a clear error naming the command that builds them."""
        directory = cache_dir() / "k8s" / pin() / "bin"
        if not (directory / ".complete").is_file():
            raise BinariesMissing(
                f"the test control plane {pin()} is not built in {directory}: run `make harness-k8s` "
                "(it builds kube-apiserver, etcd, kubectl and helm from the Go module proxy once)"
            )
        return cls(directory)
