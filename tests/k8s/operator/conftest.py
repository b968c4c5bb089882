"""The operator on the real control plane: CRDs installed from crds/, the operator run as a process under a
ServiceAccount bound to exactly `ebb_operator.rbac`'s rules (with inline clusters allowed: these tests
name their cluster in spec.cluster, a single-team install), and a Kafka target per parametrisation."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from ebb_operator import rbac
from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from tests.e2e.operator.targets import kafka_bootstrap, kafka_kind, operator_ebb_broker
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess

REPO = Path(__file__).resolve().parents[3]
OPERATOR_NAMESPACE = "ebb-system"
OPERATOR_ACCOUNT = "ebb-operator"
# Cluster-scoped names of their own: the chart tests install the chart's `ebb-operator` ClusterRole into the
# same session control plane, and two field managers of one object make server-side apply refuse.
OPERATOR_CLUSTER_ROLE = "ebb-operator-tests"
# Short periods so tests see resyncs and measurements quickly; inline clusters allowed (single team).
OPERATOR_TEST_SETTINGS = {
    "EBB_RESYNC_SECONDS": "2",
    "EBB_RECLAIM_POLL_SECONDS": "1",
    "EBB_ALLOW_INLINE_CLUSTERS": "true",
    "EBB_OPERATOR_NAMESPACE": OPERATOR_NAMESPACE,
}
__all__ = ["kafka_bootstrap", "kafka_kind", "operator_ebb_broker"]


@pytest.fixture(scope="session")
def ebb_crds(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(REPO / "crds"))
    for plural in ("deleterecords", "compactionconfigs", "retentionpolicies", "kafkaclusters"):
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{plural}.ebb.dev", "--timeout=60s")


@pytest.fixture(scope="session")
def operator_kubeconfig(control_plane: ControlPlane, ebb_crds: None) -> Path:
    """A ServiceAccount token kubeconfig whose only permissions are the operator's ClusterRole."""
    role = rbac.cluster_role(OPERATOR_CLUSTER_ROLE)
    role["rules"] = [*rbac.RULES, *rbac.INLINE_CLUSTER_RULES]
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE},
        },
        role,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": OPERATOR_CLUSTER_ROLE},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": OPERATOR_CLUSTER_ROLE,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE}
            ],
        },
    ]
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    return control_plane.service_account_kubeconfig(OPERATOR_NAMESPACE, OPERATOR_ACCOUNT)


@pytest.fixture
def start_operator(
    control_plane: ControlPlane, operator_kubeconfig: Path, k8s_namespace: str, tmp_path: Path
) -> Iterator[Callable[[], OperatorProcess]]:
    """Start `python -m ebb_operator` for the test's namespace; every process started is stopped after."""
    started: list[OperatorProcess] = []

    def start() -> OperatorProcess:
        metrics_port, liveness_port = free_port(), free_port()
        log = tmp_path / f"operator-{len(started)}.log"
        env = control_plane.env(operator_kubeconfig)
        env.update(OPERATOR_TEST_SETTINGS)
        env.pop("EBB_DEFAULT_BOOTSTRAP_SERVERS", None)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ebb_operator",
                    "-n",
                    k8s_namespace,
                    "--host",
                    "127.0.0.1",
                    "--metrics-port",
                    str(metrics_port),
                    "--liveness-port",
                    str(liveness_port),
                    "--verbose",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp_path,
            )
        op = OperatorProcess(proc, log, metrics_port)
        started.append(op)

        def live() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"operator exited {proc.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{liveness_port}/healthz", timeout=1):
                    return True
            except OSError:
                return False

        wait_until("the operator live (/healthz)", live, 60, detail=lambda _: "\n" + log.read_text())
        return op

    yield start
    for op in started:
        op.stop()
    for op in started:
        text = op.log.read_text(errors="replace")
        assert "Traceback" not in text or "TemporaryError" in text, f"operator crashed:\n{text[-4000:]}"


@pytest.fixture
def ebb_operator(start_operator: Callable[[], OperatorProcess]) -> OperatorProcess:
    return start_operator()


@pytest.fixture
def objects(control_plane: ControlPlane, k8s_namespace: str) -> Objects:
    return Objects(control_plane, k8s_namespace)


@pytest.fixture(scope="module")
def metered_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    """An ebb-broker of the module's own whose Prometheus metrics count what clients asked of it."""
    broker = EbbBroker(tmp_path_factory.mktemp("metered") / "data", metrics_port=free_port())
    broker.start()
    yield broker
    assert broker.stop() == 0
