"""The runs of a RetentionPolicy in the jobs namespace have no owner reference (it cannot reach across
namespaces): the operator finds them by the labels naming their policy. At start it deletes the runs of
policies that no longer exist (deleted while it was away), and only those; a policy deleted while it runs
takes its runs along. On the real API server, under the operator's rules for the jobs namespace
(`ebb_operator.rbac.JOB_NAMESPACE_RULES`: no right to read a Secret there)."""

from __future__ import annotations

import time
from collections.abc import Callable

import yaml

from ebb_operator import rbac
from harness.controlplane import ControlPlane
from tests.k8s.operator.conftest import OPERATOR_ACCOUNT, OPERATOR_NAMESPACE
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess

JOBS = OPERATOR_NAMESPACE  # EBB_SPARK_JOB_NAMESPACE unset: the jobs namespace is the operator's


def _run_objects(namespace: str, policy: str, uid: str, run: str) -> list[dict[str, object]]:
    labels = {
        "ebb.dev/policy-namespace": namespace,
        "ebb.dev/retention-policy": policy,
        "ebb.dev/policy-uid": uid,
        "ebb.dev/run-id": run,
    }
    meta = {"name": f"ebb-{policy}-{run}", "namespace": JOBS, "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"request.json": "{}"}},
    ]


def _left(control_plane: ControlPlane, name: str) -> set[str]:
    listed = control_plane.kubectl_json("get", "-n", JOBS, "configmaps,secrets", "-l", "ebb.dev/policy-uid")
    return {o["kind"] for o in listed["items"] if o["metadata"]["name"] == name}


def _wait_gone(control_plane: ControlPlane, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _left(control_plane, name):
        assert time.monotonic() < deadline, f"{name} still in {JOBS}: {_left(control_plane, name)}"
        time.sleep(0.3)


def test_runs_of_deleted_policies_are_swept_and_a_live_policys_stay_until_it_goes(
    control_plane: ControlPlane,
    k8s_namespace: str,
    objects: Objects,
    start_operator: Callable[[], OperatorProcess],
) -> None:
    name, api = "ebb-operator-jobs", "rbac.authorization.k8s.io"
    meta = {"name": name, "namespace": JOBS}
    role = {"apiVersion": f"{api}/v1", "kind": "Role", "metadata": meta, "rules": rbac.JOB_NAMESPACE_RULES}
    binding = {
        "apiVersion": f"{api}/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": api, "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": JOBS}],
    }
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([role, binding]))
    spec = {"topics": {"include": ["t"]}, "consumedRetention": "1h", "suspend": True,
            "analysis": {"engine": "SparkApplication"}}  # fmt: skip
    assert objects.apply("RetentionPolicy", "live", spec).returncode == 0
    uid = objects.get("retentionpolicies", "live")["metadata"]["uid"]
    # A run of the live policy, and one of a policy deleted while no operator ran.
    docs = [
        *_run_objects(k8s_namespace, "live", uid, "r1"),
        *_run_objects(k8s_namespace, "gone", "u-gone", "r1"),
    ]
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    start_operator()
    _wait_gone(control_plane, "ebb-gone-r1")
    assert _left(control_plane, "ebb-live-r1") == {"ConfigMap", "Secret"}, "a live policy's run stays"

    control_plane.kubectl("delete", "-n", k8s_namespace, "retentionpolicy", "live", "--wait=false")
    _wait_gone(control_plane, "ebb-live-r1")
