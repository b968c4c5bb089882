"""RetentionPolicy end to end: Ebb's CRDs, the operator under a
ServiceAccount bound to exactly `ebb_operator.rbac`'s rules (inline clusters allowed: a single-team
install), and the Kafka targets (ebb-broker, Apache Kafka)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from ebb_operator import rbac
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess, running_operator
from harness.spark_env import SMALL_SPARK_ENV
from tests.e2e.operator.targets import kafka_bootstrap, kafka_kind, operator_ebb_broker

REPO = Path(__file__).resolve().parents[3]
ACCOUNT_NAMESPACE, ACCOUNT = "ebb-retention", "ebb-operator"
__all__ = ["kafka_bootstrap", "kafka_kind", "operator_ebb_broker"]


@pytest.fixture(scope="session")
def retention_crds(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(REPO / "crds"))
    for crd in ("deleterecords.ebb.dev", "retentionpolicies.ebb.dev"):
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")


@pytest.fixture(scope="session")
def operator_sa_kubeconfig(control_plane: ControlPlane, retention_crds: None) -> Path:
    """A ServiceAccount token whose only permissions are the operator's ClusterRole and its leader election
    Role (the chart's rules)."""
    role = rbac.cluster_role("ebb-retention-operator")
    role["rules"] = [*rbac.RULES, *rbac.INLINE_CLUSTER_RULES]  # these policies name their cluster inline
    subject = {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ACCOUNT_NAMESPACE}
    sa_meta = {"name": ACCOUNT, "namespace": ACCOUNT_NAMESPACE}
    role_ref = {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ACCOUNT_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": sa_meta},
        role,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "ebb-retention-operator"},
            "roleRef": role_ref,
            "subjects": [subject],
        },
        *rbac.leader_election_role("ebb-retention-operator-leader", ACCOUNT_NAMESPACE, ACCOUNT),
    ]  # fmt: skip
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    return control_plane.service_account_kubeconfig(ACCOUNT_NAMESPACE, ACCOUNT)


@pytest.fixture
def start_operator(
    control_plane: ControlPlane, operator_sa_kubeconfig: Path, k8s_namespace: str, tmp_path: Path
) -> Iterator[Callable[..., OperatorProcess]]:
    """Start `python -m ebb_operator` for the test's namespace under the operator's ServiceAccount;
    stopped after the test, whose failure it becomes if the operator logged a traceback."""
    started: list[OperatorProcess] = []
    with contextlib.ExitStack() as stack:

        def start(bootstrap: str, **more: str) -> OperatorProcess:
            env = {**control_plane.env(operator_sa_kubeconfig), **SMALL_SPARK_ENV}
            log = tmp_path / f"operator-{len(started)}.log"
            settings = {
                "EBB_ALLOW_INLINE_CLUSTERS": "true",
                "EBB_DEFAULT_BOOTSTRAP_SERVERS": bootstrap,
                "EBB_OPERATOR_NAMESPACE": ACCOUNT_NAMESPACE,
                **more,  # further operator settings (environment variables)
            }
            op = stack.enter_context(
                running_operator(env, log, namespaces=(k8s_namespace,), settings=settings)
            )
            started.append(op)
            return op

        yield start
    for op in started:
        text = op.log_path.read_text(errors="replace")
        assert "Traceback" not in text, f"operator logged a traceback:\n{text[-4000:]}"
