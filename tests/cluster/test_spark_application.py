"""RetentionPolicies of a tenant with `engine: SparkApplication` run by the real Spark operator
(harness.spark_operator): the operator pod creates each run's SparkApplication, request Secret and
ConfigMap in the jobs namespace (Pod Security `restricted`), never the tenant's; the Spark operator submits
it with pyspark's spark-submit; driver and executor run as pods of the operator image there; the driver
reports its progress and plan back and the policy deletes. While the runs wait or run, nothing the tenant
can read holds the cluster's password, and the tenant cannot read what does. A run under a tenant's
service account gets only the KafkaCluster's read-only analysis credential; its driver fails (that account
may not create executor pods, the right a user forgets first), which shows as a failed run in the
policy's status. The runs start in the `spark_runs` fixture, which also looks while they run."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from harness.bounded import until, wait_until
from tests.cluster.conftest import (
    JOBS,
    NAMESPACE,
    POLL,
    SPARK_TOPIC,
    TENANT,
    TENANT_USER,
    TOOLBOX,
    Release,
    Say,
    SparkRuns,
)

pytestmark = pytest.mark.timeout(1200)


def _finished(release: Release, name: str) -> dict[str, Any] | None:
    obj: dict[str, Any] = release.cluster.kubectl_json("-n", TENANT, "get", "retentionpolicy", name)
    last = (obj.get("status") or {}).get("lastRun") or {}
    return obj if last.get("outcome") not in (None, "Running") else None


def _can_i(release: Release, verb: str, resource: str, namespace: str, *extra: str) -> str:
    """`kubectl auth can-i` as the tenant's ServiceAccount (impersonated), against the real API server."""
    proc = release.cluster.kubectl(
        "auth", "can-i", verb, resource, *extra, "-n", namespace, "--as", TENANT_USER, check=False
    )
    return str(proc.stdout.strip())


def test_credentials_stay_out_of_the_tenants_reach_while_the_runs_wait_and_run(
    release: Release, spark_runs: SparkRuns
) -> None:
    during, admin, analysis = spark_runs.during, spark_runs.admin_password, spark_runs.analysis_password
    # The runs' requests existed, in the jobs namespace: the cluster's own credential for the run with the
    # operator's service account, only the read-only analysis credential for the run with the tenant's.
    assert admin in during.requests["spark"]
    assert analysis in during.requests["spark-no-rights"] and admin not in during.requests["spark-no-rights"]
    # Nothing of the tenant's namespace held either (its Secrets decoded: the tenant may read them).
    for password in (admin, analysis):
        assert password not in during.tenant_objects and password not in during.tenant_secrets
    # Every Secret that held the cluster's password is out of the tenant's reach, as is every pod that
    # mounts the run's request (exec) and the runs themselves.
    holding = {namespace for namespace, _ in during.holding_admin_password}
    assert holding == {NAMESPACE, JOBS}, during.holding_admin_password  # the chart's, the run's request
    for namespace, name in during.holding_admin_password:
        assert _can_i(release, "get", f"secret/{name}", namespace) == "no", (namespace, name)
    for verb, resource, *extra in [
        ("list", "secrets"),
        ("create", "pods", "--subresource=exec"),
        ("get", "sparkapplications.sparkoperator.k8s.io"),
        ("get", "configmaps"),
        ("create", "pods"),
    ]:
        assert _can_i(release, verb, resource, JOBS, *extra) == "no", (verb, resource, extra)
    # ...while the tenant is the editor of its own namespace (Secrets, exec, the Ebb kinds included).
    assert _can_i(release, "get", "secrets", TENANT) == "yes"
    assert _can_i(release, "create", "retentionpolicies.ebb.dev", TENANT) == "yes"


def test_spark_application_runs_as_restricted_pods_and_a_failing_driver_shows_in_the_status(
    release: Release, spark_runs: SparkRuns, say: Say
) -> None:
    began = time.monotonic()
    cluster = release.cluster

    def detail(_: object) -> str:
        apps = cluster.kubectl("-n", JOBS, "get", "sparkapplications", "-o", "wide", check=False).stdout
        return f"\n{apps}\n{cluster.describe_pods(JOBS)}\nspark-operator:\n{spark_runs.operator.log_tail()}"

    ok = until(
        "the SparkApplication run of policy spark",
        lambda: _finished(release, "spark"),
        900,
        interval=POLL,
        detail=detail,
    )
    failed = until(
        "the run of policy spark-no-rights",
        lambda: _finished(release, "spark-no-rights"),
        300,
        interval=POLL,
        detail=detail,
    )
    say(f"SparkApplication runs finished, {time.monotonic() - began:.1f} s after this test started")

    last = ok["status"]["lastRun"]
    if last.get("outcome") != "Succeeded" and last.get("sparkApplication"):
        log = cluster.kubectl("-n", JOBS, "logs", f"{last['sparkApplication']}-driver", check=False)
        raise AssertionError(f"{ok['status']}\ndriver log:\n{(log.stdout + log.stderr)[-6000:]}")
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Succeeded"), ok["status"]
    # The tenant follows the run from its policy: where it ran, and how far it got.
    assert last["sparkApplicationNamespace"] == JOBS
    progress = last["progress"]
    assert progress["state"] == "COMPLETED" and progress["stage"], progress
    assert progress["tasksDone"] == progress["tasksTotal"] > 0, progress
    app = cluster.kubectl_json("-n", JOBS, "get", "sparkapplication", last["sparkApplication"])
    assert app["status"]["applicationState"]["state"] == "COMPLETED", app["status"]
    assert app["metadata"]["labels"]["ebb.dev/policy-namespace"] == TENANT
    # The driver ran as a pod of the operator image, under the chart's driver ServiceAccount, in the jobs
    # namespace, whose Pod Security admission (restricted) admitted it and at least one executor pod.
    driver = cluster.kubectl_json("-n", JOBS, "get", "pod", app["status"]["driverInfo"]["podName"])
    assert driver["status"]["phase"] == "Succeeded"
    spec = driver["spec"]
    assert spec["containers"][0]["image"] == release.operator_image
    assert spec["serviceAccountName"] == "ebb-spark-driver"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = spec["containers"][0]["securityContext"]
    assert (context["allowPrivilegeEscalation"], context["capabilities"]) == (False, {"drop": ["ALL"]})
    assert context["readOnlyRootFilesystem"] is True
    assert app["status"]["executorState"], app["status"]
    namespace = cluster.kubectl_json("get", "namespace", JOBS)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
             "spec": {"containers": [{"name": "c", "image": release.operator_image}]}}  # fmt: skip
    refused = cluster.kubectl(
        "-n", JOBS, "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(plain), check=False
    )
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr
    assert ok["status"]["summary"]["deletableRecords"] == 12
    assert release.pod_json_lines(TOOLBOX, "log-start", SPARK_TOPIC) == [{"0": 12}]
    # The run's request and ConfigMap are gone with it; its SparkApplication stays (historyLimit).
    run = f"ebb.dev/policy-namespace={TENANT}"
    left = cluster.kubectl_json(
        "-n", JOBS, "get", "secrets,configmaps", "-l", f"{run},ebb.dev/run-id={last['id']}"
    )
    assert left["items"] == [], [o["metadata"]["name"] for o in left["items"]]
    # test_failover killed the operator's leader in the middle of this run: the next leader followed the
    # same SparkApplication to its end (no new run), and the run made one DeleteRecords. (A run before it
    # may have failed: spark-submit gives up when the API server is slow to answer on a loaded machine.)
    assert last["id"] == spark_runs.interrupted["spark"], (last, spark_runs.interrupted)
    owned = release.cluster.kubectl_json(
        "get", "deleterecords", "-n", TENANT, "-l", "ebb.dev/retention-policy=spark"
    )["items"]
    assert [o["metadata"]["name"] for o in owned] == [f"spark-{last['id']}"]

    last = failed["status"]["lastRun"]
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Failed"), failed["status"]
    assert "FAILED" in last["message"], last
    (ready,) = [c for c in failed["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "SparkApplicationFailed"), ready
    driver_log = cluster.kubectl("-n", JOBS, "logs", f"{last['sparkApplication']}-driver", check=False).stdout
    assert "forbidden" in driver_log.lower(), driver_log[-3000:]

    # A deleted policy takes its runs along (no owner reference reaches across namespaces: its labels), as
    # it stops its retries.
    cluster.kubectl("-n", TENANT, "delete", "retentionpolicy", "spark-no-rights", "--wait=false")
    selector = f"{run},ebb.dev/retention-policy=spark-no-rights"
    wait_until(
        "the SparkApplication of the deleted policy to go",
        lambda: not cluster.kubectl_json("-n", JOBS, "get", "sparkapplications", "-l", selector)["items"],
        60,
        interval=POLL,
        detail=detail,
    )
