"""core/v1 Events on the real API server: the operator records every delete and config change as an
Event on the object it acted for, and a user reads them with `kubectl describe` / `kubectl get events`."""

from __future__ import annotations

import json

from harness.controlplane import ControlPlane


def test_event_about_an_object_is_stored_and_shown_with_it(
    control_plane: ControlPlane, k8s_namespace: str
) -> None:
    ns = ("--namespace", k8s_namespace)
    control_plane.kubectl("create", "configmap", "orders-policy", "--from-literal=k=v", *ns)
    uid = control_plane.kubectl_json("get", "configmap", "orders-policy", *ns)["metadata"]["uid"]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "orders-policy.deleted", "namespace": k8s_namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "orders-policy",
            "namespace": k8s_namespace,
            "uid": uid,
        },
        "type": "Normal",
        "reason": "RecordsDeleted",
        "message": "orders-0 log start offset 0 -> 1200",
        "source": {"component": "ebb-operator"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
    }
    control_plane.kubectl("create", "-f", "-", stdin=json.dumps(event))

    listed = control_plane.kubectl_json(
        "get", "events", *ns, "--field-selector", "involvedObject.name=orders-policy,reason=RecordsDeleted"
    )
    assert [e["message"] for e in listed["items"]] == ["orders-0 log start offset 0 -> 1200"]
    described = control_plane.kubectl("describe", "configmap", "orders-policy", *ns).stdout
    assert "RecordsDeleted" in described
    assert "orders-0 log start offset 0 -> 1200" in described
