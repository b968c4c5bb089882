"""The ValidatingWebhookConfiguration `ebb.dev`: which requests the API server sends to the operator.

One definition for both places it is written: the chart renders it (charts/ebb/files/webhooks.yaml,
written by `make crds`, its clientConfig a Service), and a local process registers it itself
(EBB_WEBHOOK_MANAGED, its clientConfig a URL). Per kind:

- CREATE and UPDATE only, and an UPDATE only when it changes the spec (matchConditions): the API server
  never calls the webhook for the operator's own status, annotation and finalizer writes, nor for a
  deletion, so an operator that is down never blocks them (nor a namespace's deletion).
- failurePolicy Fail for the tenant kinds: nothing unchecked is stored while the webhook is unreachable
  (the reconciler still refuses what was stored before the webhook existed). Ignore for KafkaCluster: a
  cluster admin can always fix the registry, with the operator down too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ebb_operator import rbac
from ebb_operator.models import ALL_CRDS, TENANT_CRDS
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.models.crd import CrdInfo

NAME = rbac.WEBHOOK_CONFIGURATION  # ValidatingWebhookConfiguration ebb.dev (the RBAC rules name it)
TIMEOUT_SECONDS = 10
# Spec changes only: metadata, status and finalizer writes (the operator's own) go through unchecked.
SPEC_CHANGED = " || ".join(
    [
        "request.operation == 'CREATE'",
        "!has(object.spec)",
        "!has(oldObject.spec)",
        "object.spec != oldObject.spec",
    ]
)


def path(info: CrdInfo) -> str:
    """The URL path of a kind's webhook; also the id of its admission handler."""
    return f"/validate-{info.plural}"


def handler_id(info: CrdInfo) -> str:
    return path(info).lstrip("/")


def webhooks(
    client_config: Callable[[str], dict[str, Any]], namespaces: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The webhooks of the configuration; `client_config(path)` says how the API server reaches each,
    `namespaces` limits the tenant kinds' to the namespaces the operator serves (empty: all)."""
    hooks = []
    for info in ALL_CRDS:
        tenant = info in TENANT_CRDS
        hook: dict[str, Any] = {
            "name": f"{info.plural}.{GROUP}",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail" if tenant else "Ignore",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": TIMEOUT_SECONDS,
            "rules": [
                {
                    "apiGroups": [GROUP],
                    "apiVersions": [VERSION],
                    "resources": [info.plural],
                    "operations": ["CREATE", "UPDATE"],
                    "scope": info.scope,
                }
            ],
            "matchConditions": [{"name": "spec-changed", "expression": SPEC_CHANGED}],
            "clientConfig": client_config(path(info)),
        }
        if tenant and namespaces:
            hook["namespaceSelector"] = {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}
                ]
            }
        hooks.append(hook)
    return hooks


def configuration(url: str, ca_bundle: str, namespaces: Sequence[str] = ()) -> dict[str, Any]:
    """The whole object, for a webhook the API server reaches at `url` (a local process)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/part-of": "ebb"}},
        "webhooks": webhooks(lambda p: {"url": url.rstrip("/") + p, "caBundle": ca_bundle}, namespaces),
    }


def chart_webhooks() -> list[dict[str, Any]]:
    """What the chart renders, its Service's name, namespace and port filled in by the template."""
    return webhooks(lambda p: {"service": {"path": p}})
