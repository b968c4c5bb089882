"""The real Spark operator (kubeflow/spark-operator, controller only) beside the cluster tier's node.

It is built from its module by harness/node/build.sh, with its own CRDs (SparkApplication,
ScheduledSparkApplication, SparkConnect), which are applied server-side (the SparkApplication CRD is
800 KB, over the client-side apply annotation's limit), and its chart, whose controller ServiceAccount
and RBAC (`spark.jobNamespaces`) are installed: the controller runs under that account's token. It runs
as a host process, as the control plane does, not as a pod: upstream's image is `apache/spark` plus the
binary and cannot be pulled here. What it does is what it does in its pod: it runs
`$SPARK_HOME/bin/spark-submit` (SPARK_HOME is the pyspark package of this venv, a Spark distribution with
the Kubernetes jars) against the API server at KUBERNETES_SERVICE_HOST:PORT, which creates the driver
pod; the driver creates the executor pods; the operator follows them into `status.applicationState`.

spark-submit reads `$SPARK_CONF_DIR/spark-defaults.conf`, where a Spark operator's installation keeps its
cluster-wide defaults. Here: harness.spark_env.SMALL_SPARK_CONF, and CPU *requests* of 100m for driver
and executor pods. A RetentionPolicy asks for whole cores (spark.driver.cores, the JVM's parallelism)
and Spark requests as much CPU by default; on a 2-core node a driver and an executor would not both fit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

from harness.bounded import until
from harness.node import Cluster, NodeError
from harness.ports import free_port
from harness.server_process import ServerProcess, wait_for
from harness.spark_env import SMALL_SPARK_CONF

NAMESPACE = "spark-operator"
RELEASE = "spark-operator"  # the controller's ServiceAccount is <release>-controller
SMALL_POD_REQUESTS = {
    "spark.kubernetes.driver.request.cores": "100m",
    "spark.kubernetes.executor.request.cores": "100m",
}
_START_TIMEOUT = 120.0


def pyspark_home() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise NodeError("pyspark is not installed in this environment (the spark extra): it is SPARK_HOME")
    return Path(spec.origin).parent


def apply_crds(cluster: Cluster) -> None:
    """The Spark operator's own CRDs, from its module (server-side: the SparkApplication CRD is 800 KB)."""
    crds = cluster.binaries.spark_operator_crds
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crds), timeout=120)
    # `kubectl wait` fails at once while a new CRD has no conditions yet: poll, bounded.
    path = '{.status.conditions[?(@.type=="Established")].status}'
    deadline = time.monotonic() + _START_TIMEOUT
    for crd in sorted(p.name.split("_", 1)[1].removesuffix(".yaml") for p in crds.glob("*.yaml")):
        name = f"{crd}.sparkoperator.k8s.io"

        def established(name: str = name) -> bool:
            return cluster.kubectl("get", "crd", name, "-o", f"jsonpath={path}", check=False).stdout == "True"

        try:
            until(f"CRD {name} Established", established, max(deadline - time.monotonic(), 0), 0.5)
        except TimeoutError:
            raise NodeError(f"CRD {name} not Established after {_START_TIMEOUT:.0f} s") from None


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def controller_kubeconfig(cluster: Cluster, namespaces: list[str], workdir: Path) -> Path:
    """The controller's ServiceAccount and RBAC from the Spark operator's own chart (for the job
    namespaces), and a kubeconfig with a token of that account."""
    if cluster.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0:
        cluster.kubectl("create", "namespace", NAMESPACE)
    rendered = cluster.helm(
        "template", RELEASE, str(cluster.binaries.spark_operator_chart), "--namespace", NAMESPACE,
        "--set", f"spark.jobNamespaces={{{','.join(namespaces)}}}",
        "--show-only", "templates/controller/rbac.yaml",
        "--show-only", "templates/controller/serviceaccount.yaml",
    ).stdout  # fmt: skip
    cluster.kubectl("apply", "-f", "-", stdin=rendered)
    # pyspark 4.3's spark-submit also creates a NetworkPolicy for each driver (server-side apply, Spark's
    # NetworkPolicyFeatureStep), which the 2.5.2 chart, made for Spark 4.0, does not grant: a user
    # submitting with Spark 4.3 needs this rule too (README, SparkApplication engine).
    name = f"{RELEASE}-network-policies"
    for namespace in namespaces:
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": [
                {
                    "apiGroups": ["networking.k8s.io"],
                    "resources": ["networkpolicies"],
                    "verbs": ["get", "create", "patch", "delete"],
                }
            ],
        }
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": f"{RELEASE}-controller", "namespace": NAMESPACE}],
        }
        cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([role, binding]))
    return cluster.cp.service_account_kubeconfig(
        NAMESPACE, f"{RELEASE}-controller", path=workdir / "spark-operator.kubeconfig"
    )


@contextlib.contextmanager
def running_spark_operator(cluster: Cluster, namespaces: list[str], workdir: Path) -> Iterator[ServerProcess]:
    """The Spark operator's controller for SparkApplications in `namespaces`, ready (its /readyz)."""
    apply_crds(cluster)
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = controller_kubeconfig(cluster, namespaces, workdir)
    conf_dir = workdir / "spark-conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    defaults = {**SMALL_SPARK_CONF, **SMALL_POD_REQUESTS}
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in defaults.items()))
    java = shutil.which("java")
    if java is None:
        raise NodeError("spark-submit needs Java 17 on PATH (the Spark operator runs it on this machine)")
    # spark-submit forwards the submitter's PYSPARK_PYTHON (and other Spark settings from the environment)
    # into the driver pod, where a host path such as this venv's interpreter does not exist: the driver
    # then exits 1. The test process sets PYSPARK_PYTHON once a local Spark session has run in it, so
    # the host's Spark variables stay out; in a cluster the Spark operator's own pod has none of them.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env = {
        **inherited,
        "SPARK_HOME": str(pyspark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "KUBERNETES_SERVICE_HOST": cluster.host_ip,
        "KUBERNETES_SERVICE_PORT": str(cluster.cp.port),
        "KUBECONFIG": str(kubeconfig),
    }
    port = free_port()
    process = ServerProcess(
        "spark-operator",
        [
            str(cluster.binaries["spark-operator"]),
            "controller",
            "start",
            f"--namespaces={','.join(namespaces)}",
            "--leader-election=false",
            "--enable-metrics=false",
            # Ebb's analysis job runs with the Spark UI off: no UI Service to create.
            "--enable-ui-service=false",
            f"--health-probe-bind-address=127.0.0.1:{port}",
        ],
        workdir / "spark-operator.log",
        env=env,
    )
    cluster.own(process)
    try:
        wait_for("ready (/readyz)", process, lambda: _ready(port), _START_TIMEOUT, NodeError)
        yield process
    finally:
        process.stop()
