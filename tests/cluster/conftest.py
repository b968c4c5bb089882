"""The cluster tier: Ebb as users run it, pods on a real node (harness.node, docs/cluster-node.md).

Ebb is installed from a registry, as users install it: a real OCI registry runs beside the node
(harness.registry), this tree's images and the previous release's (built from a git worktree of its
commit, tools/releases.py) are pushed to it with their charts (harness.publish, what `make publish`
runs), and the node's containerd pulls the images through its registry hosts configuration. One release
of the chart per session: the previous release installed with `helm install oci://...`, then upgraded to
this tree's chart (test_upgrade.py does it under load, and checks a rollback; the `release` fixture does it
when that test does not run). Kafka clients run in pods (pod_scripts/kafka_client.py, mounted from a
ConfigMap), where the broker's advertised DNS name resolves as it does for users. Each step's time is
printed as it ends. A machine where the node cannot run fails here with the reason, never skips.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import publish
from harness.bounded import until, wait_until
from harness.docker_engine import docker_engine
from harness.images import ensure_ebb_images, ensure_node_images, release_images, release_worktree
from harness.k8s_binaries import Binaries
from harness.node import Cluster, prune_pulled_images, running_cluster
from harness.node_binaries import NodeBinaries
from harness.registry import Registry, running_registry
from harness.server_process import ServerProcess
from harness.spark_env import SMALL_SPARK_ENV
from harness.spark_operator import running_spark_operator
from tools.releases import PREVIOUS

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ebb"
EXAMPLES = ROOT / "examples"
SCRIPTS = Path(__file__).parent / "pod_scripts"
NAMESPACE = RELEASE = "ebb"
# The chart's spark.jobNamespace: where SparkApplication runs live, under Pod Security `restricted`.
JOBS = "ebb-jobs"
BOOTSTRAP = f"ebb-broker.{NAMESPACE}.svc.cluster.local:9092"  # what the chart's NOTES print
TOOLBOX = "toolbox"
# Seconds between a wait's checks: each is a kubectl call (some an exec in a pod), on a loaded machine.
POLL = 1.0
UNINSTALL_TENANT = "uninstall-tenant"  # test_uninstall deletes it
HEAD_VERSION = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["version"])

Say = Callable[[str], None]
# The modules in the order they run. test_host_restored starts and kills a node of its own, so it runs
# before the session's node exists. test_upgrade takes the first install (the previous release) to this
# tree's chart. The SparkApplication runs start with the first test that has the release (fixture
# spark_runs) and take minutes: test_failover kills the operator's leader in the middle of one, the quick
# tests run meanwhile, test_spark_application checks them, and only then does test_broker_restart restart
# the broker they read from. Uninstall last.
ORDER = (
    "test_host_restored.py",
    "test_upgrade.py",
    "test_failover.py",
    "test_chart_on_node.py",
    "test_examples_on_node.py",
    "test_observability.py",
    "test_spark_application.py",
    "test_broker_restart.py",
    "test_uninstall.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Within the cluster tier (last of all, tests/conftest.py), modules run in ORDER."""
    here = Path(__file__).parent.resolve()

    def order(item: pytest.Item) -> int:
        path = Path(str(item.fspath)).resolve()
        if path.parent != here:
            return -1
        return ORDER.index(path.name) if path.name in ORDER else len(ORDER)

    items.sort(key=order)


@pytest.fixture(scope="session")
def say(request: pytest.FixtureRequest) -> Say:
    """Print a line at once, past pytest's output capturing (each step's time, as it ends)."""
    capture = request.config.pluginmanager.get_plugin("capturemanager")

    def write(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n[cluster] {line}", end="", flush=True)

    return write


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as r:
        yield r


@dataclass(frozen=True)
class Published:
    """What the session's registry holds: this tree's release and the previous one."""

    head: publish.Published
    previous: publish.Published


@pytest.fixture(scope="session")
def published(registry: Registry, tmp_path_factory: pytest.TempPathFactory, say: Say) -> Published:
    """Both releases built (cached by content hash) and pushed, images and charts (`make publish`)."""
    began = time.monotonic()
    helm = str(Binaries.from_cache().helm)
    out = tmp_path_factory.mktemp("publish")
    with docker_engine() as engine:
        head = ensure_ebb_images(engine)
        previous = ensure_ebb_images(engine, release_images(PREVIOUS.version, PREVIOUS.commit))
        say(f"images built or found ({time.monotonic() - began:.1f} s)")
        pushed = Published(
            publish.publish(
                engine, registry.host, HEAD_VERSION, head, out=out / "head", helm=helm, plain_http=True
            ),
            publish.publish(
                engine, registry.host, PREVIOUS.version, previous, out=out / "previous", helm=helm,
                plain_http=True, chart=release_worktree(PREVIOUS.commit) / "charts" / "ebb",
            ),
        )  # fmt: skip
    say(f"both releases pushed to {registry.host} ({time.monotonic() - began:.1f} s)")
    return pushed


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, say: Say, registry: Registry, published: Published
) -> Iterator[Cluster]:
    began = time.monotonic()
    images = ensure_node_images(NodeBinaries.from_cache().bin)
    say(f"images ready ({time.monotonic() - began:.1f} s): {', '.join(i.ref for i in images.values())}")
    with running_cluster(
        tmp_path_factory.mktemp("cluster"), images, say=say, registries=[registry.host]
    ) as c:
        wanted = [*published.head.images.values(), *published.previous.images.values()]
        prune_pulled_images(f"{registry.host}/", wanted)
        yield c


@dataclass(frozen=True)
class Release:
    cluster: Cluster
    namespace: str
    operator_image: str
    broker_image: str

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        return self.cluster.kubectl("-n", self.namespace, *args, **kwargs)

    def get(self, kind: str, name: str) -> Any:
        return self.cluster.kubectl_json("-n", self.namespace, "get", kind, name)

    def pod_json_lines(self, pod: str, *command: str, timeout: float = 120) -> list[dict[str, Any]]:
        """Run `python /scripts/kafka_client.py COMMAND...` in a pod; its JSON lines."""
        proc = self.kubectl(
            "exec", pod, "--", "python", "/scripts/kafka_client.py", *command, timeout=timeout
        )
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def logs(self, pod: str) -> list[dict[str, Any]]:
        proc = self.kubectl("logs", pod, check=False)
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    def chart_version(self) -> str:
        """The version of the chart the release runs now."""
        meta = self.cluster.helm("get", "metadata", RELEASE, "-n", self.namespace, "-o", "json").stdout
        return str(json.loads(meta)["version"])


def helm_from_registry(cluster: Cluster, command: str, release: publish.Published, *args: str) -> float:
    """`helm install|upgrade ebb oci://...` of a published release with the session's values (Spark on,
    the analysis job's Local engine sized for a few records, images pulled on every pod start so that each
    start goes to the registry), waiting for its pods; the seconds it took."""
    # The chart's default grant (the release namespace, every topic and option), and a tenant namespace
    # test_uninstall deletes.
    grant = {
        "namespaces": [NAMESPACE, UNINSTALL_TENANT],
        "topics": [".*"],
        "allow": ["GuardNone", "ForcedRetention", "Compaction", "SparkOverrides"],
    }
    values = {
        "operator": {
            "image": {"pullPolicy": "Always"},
            "extraEnv": [{"name": k, "value": v} for k, v in SMALL_SPARK_ENV.items()],
            "defaultCluster": {"access": [grant]},
        },
        "broker": {"image": {"pullPolicy": "Always"}},
        # The previous release's chart has no jobNamespace (its values schema refuses unknown keys).
        "spark": {"enabled": True, **({"jobNamespace": JOBS} if release.version == HEAD_VERSION else {})},
    }
    # As an admin would: the jobs namespace first (the chart puts its Spark RBAC there), enforcing the
    # strictest Pod Security profile on every driver and executor pod.
    jobs = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": JOBS, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
    }
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(jobs))
    values_file = cluster.workdir / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    began = time.monotonic()
    cluster.helm(
        command, RELEASE, release.chart, "--version", release.version, "--plain-http",
        "--namespace", NAMESPACE, "--values", str(values_file), "--wait", "--timeout", "5m", *args,
        timeout=400,
    )  # fmt: skip
    cluster.wait_ready("statefulset", "ebb-broker", NAMESPACE)
    cluster.wait_ready("deployment", "ebb-operator", NAMESPACE)
    return time.monotonic() - began


@pytest.fixture(scope="session")
def first_install(cluster: Cluster, published: Published, say: Say) -> Release:
    """The previous release, installed from the registry, with a toolbox pod for Kafka clients."""
    seconds = helm_from_registry(cluster, "install", published.previous, "--create-namespace")
    say(f"helm install {published.previous.chart} --version {published.previous.version}: {seconds:.1f} s")
    return start_toolbox(
        Release(cluster, NAMESPACE, published.head.images["operator"], published.head.images["broker"]), say
    )


@pytest.fixture(scope="session")
def release(first_install: Release, published: Published, say: Say) -> Release:
    """This tree's release, upgraded to from the previous one (test_upgrade has done it, under load)."""
    if first_install.chart_version() != published.head.version:
        seconds = helm_from_registry(first_install.cluster, "upgrade", published.head)
        wait_for_broker_name(first_install)
        say(f"helm upgrade to {published.head.version}: {seconds:.1f} s")
    return first_install


def wait_for_broker_name(rel: Release) -> None:
    """Until the broker's advertised name resolves, in the toolbox, to the pod the upgrade restarted it as:
    CoreDNS answers the old pod's address from its cache for up to 30 s, and a client connecting there
    meanwhile fails (EHOSTUNREACH)."""
    name = f"ebb-broker-0.ebb-broker-headless.{NAMESPACE}.svc.cluster.local"

    def resolved() -> bool:
        found = rel.kubectl("exec", TOOLBOX, "--", "getent", "hosts", name, check=False).stdout.split()
        return bool(found) and found[0] == rel.get("pod", "ebb-broker-0")["status"].get("podIP")

    wait_until(f"{name} to resolve to the broker pod's address", resolved, 60, interval=POLL)


def start_toolbox(rel: Release, say: Say) -> Release:
    """The Kafka clients' scripts in a ConfigMap, and a pod with them to run one-off commands in."""
    began = time.monotonic()
    rel.kubectl("create", "configmap", "kafka-client", f"--from-file={SCRIPTS / 'kafka_client.py'}")
    rel.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(client_pod(rel, TOOLBOX, ["sleep", "infinity"])))
    rel.kubectl("wait", "--for=condition=Ready", f"pod/{TOOLBOX}", "--timeout=120s", timeout=150)
    say(f"toolbox pod ready: {time.monotonic() - began:.1f} s")
    return rel


def client_pod(rel: Release, name: str, command: list[str]) -> dict[str, Any]:
    """A pod of the broker image (Python and kafka-python) with the client script mounted, labelled as a
    Kafka client, and with the chart's admin password and CA where the broker speaks SASL_SSL."""
    labels = {"app.kubernetes.io/name": "ebb-test-client", "ebb.dev/kafka-client": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "client",
                    "image": rel.broker_image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": command,
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "volumeMounts": [
                        {"name": "scripts", "mountPath": "/scripts"},
                        {"name": "admin", "mountPath": "/etc/ebb-kafka/admin"},
                        {"name": "tls", "mountPath": "/etc/ebb-kafka/tls"},
                    ],
                }
            ],
            "volumes": [
                {"name": "scripts", "configMap": {"name": "kafka-client"}},
                {"name": "admin", "secret": {"secretName": "ebb-broker-admin", "optional": True}},
                {"name": "tls", "secret": {"secretName": "ebb-broker-tls", "optional": True}},
            ],
        },
    }


def start_client(rel: Release, name: str, *command: str) -> None:
    """A pod running `kafka_client.py COMMAND...`, started (its output: Release.logs)."""
    argv = ["python", "/scripts/kafka_client.py", *command]
    rel.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(client_pod(rel, name, argv)))
    rel.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", timeout=150)


# --- SparkApplication runs ---------------------------------------------------------------------------

SPARK_TOPIC, SPARK_GROUP = "sa-orders", "sa-app"
HOUR_MS = 3_600_000
TENANT = "team-spark"  # the namespace of the SparkApplication policies: a tenant's, not the operator's
TENANT_USER = f"system:serviceaccount:{TENANT}:tenant"
ANALYSIS_SECRET = "ebb-analysis-client"


def spark_policy(name: str, cluster: str, **spark: Any) -> dict[str, Any]:
    """A RetentionPolicy of the tenant with engine SparkApplication on SPARK_TOPIC, counting SPARK_GROUP."""
    return {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {
            "clusterRef": {"name": cluster},
            "topics": {"include": [SPARK_TOPIC]},
            "consumers": {"include": [SPARK_GROUP]},
            "consumedRetention": "1h",
            "schedule": {"interval": "1h"},
            "analysis": {
                "engine": "SparkApplication",
                "sparkApplication": {
                    "driver": {"cores": 1, "memory": "512m"},
                    "executor": {"cores": 1, "memory": "512m", "instances": 1},
                    **spark,
                },
            },
        },
    }


def _secret_text(secret: dict[str, Any]) -> str:
    """A Secret's data, decoded, as one string to search."""
    return "\n".join(
        base64.b64decode(v).decode(errors="replace") for v in (secret.get("data") or {}).values()
    )


@dataclass(frozen=True)
class DuringRun:
    """What an admin saw while both runs' requests existed (their Secrets in the jobs namespace)."""

    tenant_objects: str  # every Secret, ConfigMap, SparkApplication, pod and policy of the tenant, as JSON
    tenant_secrets: str  # the tenant's Secrets, decoded
    requests: dict[str, str]  # policy -> its run's request Secret in the jobs namespace, decoded
    holding_admin_password: list[tuple[str, str]]  # (namespace, name) of every Secret that holds it


@dataclass(frozen=True)
class SparkRuns:
    operator: ServerProcess
    policies: tuple[str, ...]
    admin_password: str
    analysis_password: str
    during: DuringRun
    # policy -> the id of its run in whose middle test_failover killed the operator's leader
    interrupted: dict[str, str] = field(default_factory=dict)


def tenant_and_clusters(release: Release) -> str:
    """The tenant namespace with its ServiceAccount bound to `ebb-edit` and Kubernetes' `edit` (which
    aggregates it: the tenant may read every Secret and exec into every pod of its namespace), and two
    KafkaClusters granting it the Spark topics, both with the chart's admin credential: `team-spark`, and
    `team-spark-readonly`, which also names an analysis credential (read-only user `ebb-analysis`; the one
    run on it fails before it reaches Kafka) and allows SparkOverrides. Returns the analysis password."""
    cluster = release.cluster
    password = secrets.token_urlsafe(18)
    client = cluster.kubectl_json("-n", NAMESPACE, "get", "secret", "ebb-broker-client")["data"]
    props = {k: base64.b64decode(v).decode() for k, v in client.items()}
    props.update({"sasl.username": "ebb-analysis", "sasl.password": password})
    grant = {"namespaces": [TENANT], "topics": ["sa-.*"]}
    spec = {"bootstrapServers": BOOTSTRAP, "credentials": {"secretRef": {"name": "ebb-broker-client"}}}
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": TENANT}},
        *(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"tenant-{role}", "namespace": TENANT},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": TENANT}],
            }
            for role in ("ebb-edit", "edit")
        ),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": ANALYSIS_SECRET, "namespace": NAMESPACE},
            "stringData": props,
        },
        {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "KafkaCluster",
            "metadata": {"name": TENANT},
            "spec": {**spec, "access": [grant]},
        },
        {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "KafkaCluster",
            "metadata": {"name": f"{TENANT}-readonly"},
            "spec": {
                **spec,
                "analysisCredentials": {"secretRef": {"name": ANALYSIS_SECRET}},
                "access": [{**grant, "allow": ["SparkOverrides"]}],
            },
        },
    ]
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    return password


def during_run(release: Release, policies: tuple[str, ...], admin_password: str) -> DuringRun:
    """Wait (bounded) until every policy's run has its request Secret in the jobs namespace, then look."""
    cluster = release.cluster

    def requests() -> dict[str, str] | None:
        listed = cluster.kubectl_json(
            "-n", JOBS, "get", "secrets", "-l", f"ebb.dev/policy-namespace={TENANT}"
        )
        found = {
            s["metadata"]["labels"]["ebb.dev/retention-policy"]: _secret_text(s) for s in listed["items"]
        }
        return found if set(found) == set(policies) else None

    found = until("the runs' request Secrets in the jobs namespace", requests, 300, interval=POLL)
    kinds = "secrets,configmaps,sparkapplications,pods,retentionpolicies"
    tenant = cluster.kubectl_json("-n", TENANT, "get", kinds)
    every = cluster.kubectl_json("get", "secrets", "--all-namespaces")["items"]
    return DuringRun(
        tenant_objects=json.dumps(tenant),
        tenant_secrets="\n".join(_secret_text(s) for s in tenant["items"] if s["kind"] == "Secret"),
        requests=found,
        holding_admin_password=[
            (s["metadata"]["namespace"], s["metadata"]["name"])
            for s in every
            if admin_password in _secret_text(s)
        ],
    )


@pytest.fixture(scope="session")
def spark_runs(release: Release, tmp_path_factory: pytest.TempPathFactory, say: Say) -> Iterator[SparkRuns]:
    """The real Spark operator (harness.spark_operator) watching the jobs namespace, and two
    RetentionPolicies with engine SparkApplication in the tenant's namespace: `spark` (KafkaCluster
    team-spark), and `spark-no-rights` (team-spark-readonly), whose driver runs under the jobs namespace's
    `default` ServiceAccount, which may not create executor pods. Their runs take minutes on a loaded
    machine: test_examples_on_node requests this fixture so they overlap its own Spark run (the
    RetentionPolicy example's) and test_chart_on_node's, test_spark_application checks their outcome and
    what was seen while they ran."""
    began = time.monotonic()
    with running_spark_operator(release.cluster, [JOBS], tmp_path_factory.mktemp("spark-operator")) as op:
        say(f"Spark operator ready (its CRDs, its chart's RBAC): {time.monotonic() - began:.1f} s")
        began = time.monotonic()
        release.pod_json_lines(TOOLBOX, "create-topics", f"{SPARK_TOPIC}:1")
        # 30 records two hours old; the group has read 12 of them.
        produced = release.pod_json_lines(TOOLBOX, "produce", SPARK_TOPIC, "30", "--age-ms", str(2 * HOUR_MS))
        assert produced[-1] == {"done": 30}, produced[-3:]
        release.pod_json_lines(TOOLBOX, "commit", SPARK_TOPIC, SPARK_GROUP, "0:12")
        analysis_password = tenant_and_clusters(release)
        admin = release.get("secret", "ebb-broker-admin")["data"]["password"]
        admin_password = base64.b64decode(admin).decode()
        policies = (
            spark_policy("spark", TENANT),
            spark_policy("spark-no-rights", f"{TENANT}-readonly", serviceAccount="default"),
        )
        release.cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(policies))
        names = tuple(p["metadata"]["name"] for p in policies)
        during = during_run(release, names, admin_password)
        say(f"tenant, KafkaClusters, policies, both runs' requests seen: {time.monotonic() - began:.1f} s")
        yield SparkRuns(op, names, admin_password, analysis_password, during)
