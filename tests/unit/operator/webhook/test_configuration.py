"""ValidatingWebhookConfiguration ebb.dev: what the API server sends to the operator, and how it fails."""

from __future__ import annotations

from ebb_operator.webhook import configuration
from ebb_operator.webhook.server import served_namespaces


def test_tenant_kinds_fail_closed_and_the_registry_stays_writable() -> None:
    hooks = {h["name"]: h for h in configuration.chart_webhooks()}
    assert {n: h["failurePolicy"] for n, h in hooks.items()} == {
        "deleterecords.ebb.dev": "Fail",
        "compactionconfigs.ebb.dev": "Fail",
        "retentionpolicies.ebb.dev": "Fail",
        "kafkaclusters.ebb.dev": "Ignore",
    }
    for hook in hooks.values():
        (rule,) = hook["rules"]
        assert rule["operations"] == ["CREATE", "UPDATE"], "deletions never wait for the webhook"
        assert hook["sideEffects"] == "None" and hook["timeoutSeconds"] <= 30
        assert hook["clientConfig"] == {"service": {"path": f"/validate-{rule['resources'][0]}"}}


def test_only_spec_changes_are_sent() -> None:
    """The operator's own status, annotation and finalizer writes never depend on the webhook."""
    (condition,) = configuration.chart_webhooks()[0]["matchConditions"]
    assert condition["expression"].startswith("request.operation == 'CREATE' || ")
    assert "object.spec != oldObject.spec" in condition["expression"]


def test_a_local_process_registers_its_url_and_ca_for_the_namespaces_it_serves() -> None:
    body = configuration.configuration("https://127.0.0.1:9443", "Q0E=", ("team-a",))
    assert body["metadata"]["name"] == "ebb.dev"
    hooks = {h["name"]: h for h in body["webhooks"]}
    assert hooks["deleterecords.ebb.dev"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/validate-deleterecords",
        "caBundle": "Q0E=",
    }
    selector = hooks["deleterecords.ebb.dev"]["namespaceSelector"]["matchExpressions"][0]
    assert selector == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}
    assert "namespaceSelector" not in hooks["kafkaclusters.ebb.dev"], "cluster-scoped: no namespace"


def test_namespace_patterns_cannot_be_a_selector() -> None:
    assert served_namespaces(("team-a", "team-b")) == ("team-a", "team-b")
    assert served_namespaces(("team-*",)) == ()
    assert served_namespaces(("!kube-system",)) == ()
