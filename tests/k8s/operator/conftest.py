"""The operator on the real control plane: CRDs installed from crds/, the operator run as a process under a
ServiceAccount bound to exactly `ebb_operator.rbac`'s rules (with inline clusters allowed: these tests
name their cluster in spec.cluster, a single-team install), and a Kafka target per parametrisation."""

from __future__ import annotations

import signal
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
from harness.ports import free_port, free_ports
from tests.e2e.operator.targets import kafka_bootstrap, kafka_kind, operator_ebb_broker
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess

REPO = Path(__file__).resolve().parents[3]
OPERATOR_NAMESPACE = "ebb-system"
OPERATOR_ACCOUNT = "ebb-operator"
# Cluster-scoped names of their own: the chart tests install the chart's `ebb-operator` ClusterRole into the
# same session control plane, and two field managers of one object make server-side apply refuse.
OPERATOR_CLUSTER_ROLE = "ebb-operator-tests"
# Short periods so tests see resyncs, measurements and takeovers quickly (a process started after a kill -9
# waits a whole lease for the one the dead process held); inline clusters allowed (single team).
OPERATOR_TEST_SETTINGS = {
    "EBB_RESYNC_SECONDS": "2",
    "EBB_RECLAIM_POLL_SECONDS": "1",
    "EBB_LEADER_LEASE_SECONDS": "6",
    "EBB_LEADER_RENEW_DEADLINE_SECONDS": "4",
    "EBB_LEADER_RETRY_PERIOD_SECONDS": "1",
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
    """A ServiceAccount token kubeconfig whose only permissions are the operator's ClusterRole, and, in its
    own namespace, what the admission webhook's own certificate needs (a local process registers its
    webhook itself: EBB_WEBHOOK_MANAGED) and its leader election Role."""
    role = rbac.cluster_role(OPERATOR_CLUSTER_ROLE)
    role["rules"] = [*rbac.RULES, *rbac.INLINE_CLUSTER_RULES, *rbac.WEBHOOK_MANAGED_RULES]
    subject = {"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": OPERATOR_NAMESPACE}
    own = {"name": OPERATOR_CLUSTER_ROLE, "namespace": OPERATOR_NAMESPACE}
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
            "subjects": [subject],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": own,
            "rules": [*rbac.OWN_NAMESPACE_RULES, *rbac.WEBHOOK_CERTIFICATE_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": own,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": OPERATOR_CLUSTER_ROLE,
            },
            "subjects": [subject],
        },
        *rbac.leader_election_role(f"{OPERATOR_CLUSTER_ROLE}-leader", OPERATOR_NAMESPACE, OPERATOR_ACCOUNT),
    ]
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    return control_plane.service_account_kubeconfig(OPERATOR_NAMESPACE, OPERATOR_ACCOUNT)


@pytest.fixture
def start_operators(
    control_plane: ControlPlane, operator_kubeconfig: Path, k8s_namespace: str, tmp_path: Path
) -> Iterator[Callable[..., list[OperatorProcess]]]:
    """Start `count` `python -m ebb_operator` processes at once for the test's namespace, live when returned
    (`settings`: further EBB_* variables); every process started is stopped after."""
    started: list[OperatorProcess] = []

    def start(count: int = 1, **settings: str) -> list[OperatorProcess]:
        env = control_plane.env(operator_kubeconfig)
        env.update({**OPERATOR_TEST_SETTINGS, **settings})
        env.pop("EBB_DEFAULT_BOOTSTRAP_SERVERS", None)
        launched = []
        ports = free_ports(2 * count)
        for port, liveness_port in zip(ports[::2], ports[1::2], strict=True):
            log = tmp_path / f"operator-{len(started)}.log"
            argv = [
                sys.executable, "-m", "ebb_operator", "-n", k8s_namespace, "--host", "127.0.0.1",
                "--metrics-port", str(port), "--liveness-port", str(liveness_port), "--verbose",
            ]  # fmt: skip
            with log.open("ab") as out:
                proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
            started.append(OperatorProcess(proc, log, port))
            launched.append((started[-1], liveness_port))
        for op, liveness_port in launched:

            def live(op: OperatorProcess = op, liveness_port: int = liveness_port) -> bool:
                if op.process.poll() is not None:
                    raise RuntimeError(f"operator exited {op.process.returncode}:\n{op.log.read_text()}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{liveness_port}/healthz", timeout=1):
                        return True
                except OSError:
                    return False

            def its_log(_: bool, op: OperatorProcess = op) -> str:
                return "\n" + op.log.read_text()

            wait_until("the operator live (/healthz)", live, 60, detail=its_log)
        return [op for op, _ in launched]

    yield start
    for op in started:  # all at once: each takes a few seconds to stop
        if op.process.poll() is None:
            op.process.send_signal(signal.SIGTERM)
    for op in started:
        op.stop()
    for op in started:
        text = op.log.read_text(errors="replace")
        assert "Traceback" not in text or "TemporaryError" in text, f"operator crashed:\n{text[-4000:]}"


@pytest.fixture
def start_operator(start_operators: Callable[..., list[OperatorProcess]]) -> Callable[..., OperatorProcess]:
    """Start one operator process (start_operators)."""
    return lambda **settings: start_operators(1, **settings)[0]


@pytest.fixture
def ebb_operator(start_operator: Callable[..., OperatorProcess]) -> OperatorProcess:
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
