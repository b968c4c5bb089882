"""Where `make harness-node` (harness/node/build.sh) put the node's binaries and the upstream manifests
that come with them (the Spark operator's CRDs, local-path-provisioner's deployment)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.k8s_binaries import cache_dir

NODE_DIR = Path(__file__).parent / "node"
K8S_DIR = Path(__file__).parent / "k8s"


class NodeBinariesMissing(RuntimeError):
    """The node's binaries of the pinned versions have not been built on this machine."""


def _versions(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def node_pin() -> str:
    """The node build's cache key, computed exactly as harness/node/build.sh computes it."""
    k, n = _versions(K8S_DIR / "versions.env"), _versions(NODE_DIR / "versions.env")
    return (
        f"{k['KUBERNETES_VERSION'].removeprefix('v')}-coredns{n['COREDNS_VERSION'].removeprefix('v')}"
        f"-lpp{n['LOCAL_PATH_VERSION'].removeprefix('v')}-so{n['SPARK_OPERATOR_VERSION'].removeprefix('v')}"
        f"-prom{n['PROMTOOL_VERSION'].removeprefix('v')}-pause{n['PAUSE_VERSION']}"
    )


@dataclass(frozen=True)
class NodeBinaries:
    """What harness/node/build.sh built: binaries in bin/, the upstream manifests beside them."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def __getitem__(self, name: str) -> Path:
        return self.bin / name

    @property
    def spark_operator_crds(self) -> Path:
        return self.root / "spark-operator-crds"

    @property
    def spark_operator_chart(self) -> Path:
        return self.root / "spark-operator-chart"

    @property
    def local_path_manifest(self) -> Path:
        return self.root / "local-path-storage.yaml"

    @classmethod
    def from_cache(cls) -> NodeBinaries:
        root = cache_dir() / "node" / node_pin()
        found = cls(root)
        if not all(
            p.exists()
            for p in (
                root / "bin" / ".complete",
                found.local_path_manifest,
                found.spark_operator_crds,
                found.spark_operator_chart,
            )
        ):
            raise NodeBinariesMissing(
                f"the node's binaries {node_pin()} are not built in {root}/bin: run `make harness-node` "
                "(harness/node/build.sh: kubelet, kube-proxy, kube-controller-manager, kube-scheduler, "
                "CoreDNS, local-path-provisioner, the Spark operator, promtool and pause, once; 25-40 min "
                "of CPU cold)"
            )
        return found
