"""The handlers' own Kubernetes calls besides kopf's: writing status mid-handler and reading Secrets.

kopf applies `patch` only after a handler returns; DeleteRecords must record its plan in status
*before* it deletes anything (so a restart resumes the same plan), hence a direct status patch.
The `kubernetes` client is synchronous: callers run these functions in a thread.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from ebb_operator.models.common import GROUP, VERSION

_lock = threading.Lock()
_api: client.ApiClient | None = None


def api_client() -> client.ApiClient:
    """In-cluster credentials when running in a pod, else $KUBECONFIG (the same login kopf uses)."""
    global _api
    with _lock:
        if _api is None:
            try:
                config.load_incluster_config()
            except ConfigException:
                config.load_kube_config()
            _api = client.ApiClient()
        return _api


def reset_client() -> None:
    """Forget the cached client (tests that switch clusters or credentials)."""
    global _api
    with _lock:
        _api = None


@dataclass(frozen=True)
class ObjectRef:
    plural: str
    namespace: str
    name: str


def patch_status(ref: ObjectRef, status: dict[str, Any]) -> dict[str, Any]:
    """Merge-patch the status subresource; lists (conditions, partitions) are replaced whole."""
    api = client.CustomObjectsApi(api_client())
    # The kubernetes client types custom objects as `object`; the API server returns the object's JSON.
    return cast(
        "dict[str, Any]",
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, ref.namespace, ref.plural, ref.name, {"status": status}
        ),
    )


def read_secret(namespace: str, name: str) -> dict[str, str]:
    """A Secret's data, decoded; raises kubernetes.client.ApiException (404, 403) as is."""
    secret = client.CoreV1Api(api_client()).read_namespaced_secret(name, namespace)
    data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    data.update(secret.string_data or {})
    return data
