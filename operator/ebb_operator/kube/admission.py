"""The admission webhook's objects: the Secret that holds its certificate, and the
ValidatingWebhookConfiguration the API server reads to call it."""

from __future__ import annotations

import base64
from typing import Any, cast

from kubernetes import client

from ebb_operator.kube.client import api_client
from ebb_operator.kube.errors import NotFoundError, translated


def _core() -> client.CoreV1Api:
    return client.CoreV1Api(api_client())


def _webhooks() -> client.AdmissionregistrationV1Api:
    return client.AdmissionregistrationV1Api(api_client())


@translated
def read_tls_secret(namespace: str, name: str) -> tuple[dict[str, str], str]:
    """A Secret's data, decoded, and its resourceVersion (for a replace that loses to a concurrent one)."""
    secret = _core().read_namespaced_secret(name, namespace)
    data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    return data, str(secret.metadata.resource_version if secret.metadata else "")


def _tls_secret(namespace: str, name: str, data: dict[str, str], version: str = "") -> client.V1Secret:
    meta = client.V1ObjectMeta(
        name=name,
        namespace=namespace,
        labels={"app.kubernetes.io/component": "operator", "app.kubernetes.io/part-of": "ebb"},
        resource_version=version or None,
    )
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return client.V1Secret(metadata=meta, type="kubernetes.io/tls", data=encoded)


@translated
def create_tls_secret(namespace: str, name: str, data: dict[str, str]) -> None:
    """Create the Secret; AlreadyExistsError when another replica created it first."""
    _core().create_namespaced_secret(namespace, _tls_secret(namespace, name, data))


@translated
def replace_tls_secret(namespace: str, name: str, data: dict[str, str], version: str) -> None:
    """Replace the Secret if it is still at `version`; a 409 (KubeApiError) when another replica was first."""
    _core().replace_namespaced_secret(name, namespace, _tls_secret(namespace, name, data, version))


@translated
def read_webhook_configuration(name: str) -> dict[str, Any]:
    found = _webhooks().read_validating_webhook_configuration(name)
    return cast("dict[str, Any]", api_client().sanitize_for_serialization(found))


@translated
def set_webhook_ca_bundle(name: str, ca_bundle: str) -> bool:
    """Put `ca_bundle` (base64 PEM) into every webhook of the configuration that lacks it; True if it
    changed. The patch tests the resourceVersion read, so it never applies to a newer configuration."""
    current = read_webhook_configuration(name)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": current["metadata"]["resourceVersion"]}
    ]
    for i, hook in enumerate(current.get("webhooks") or []):
        if hook.get("clientConfig", {}).get("caBundle") != ca_bundle:
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": ca_bundle})
    if len(ops) == 1:
        return False
    _webhooks().patch_validating_webhook_configuration(name, ops, _content_type="application/json-patch+json")
    return True


@translated
def apply_webhook_configuration(body: dict[str, Any]) -> None:
    """Create the configuration; if one of that name exists (the chart's), patch its webhooks to `body`'s
    (a patch needs no more than the chart's RBAC allows on it)."""
    name = body["metadata"]["name"]
    try:
        current = read_webhook_configuration(name)
    except NotFoundError:
        _webhooks().create_validating_webhook_configuration(_configuration(body))
        return
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": current["metadata"]["resourceVersion"]},
        {"op": "add", "path": "/webhooks", "value": body["webhooks"]},
    ]
    _webhooks().patch_validating_webhook_configuration(name, ops, _content_type="application/json-patch+json")


def _configuration(body: dict[str, Any]) -> client.V1ValidatingWebhookConfiguration:
    found = client.V1ValidatingWebhookConfiguration.from_dict(body)
    assert found is not None
    return found


@translated
def delete_webhook_configuration(name: str) -> None:
    _webhooks().delete_validating_webhook_configuration(name)
