"""Core objects: Secrets (cluster credentials, a Spark run's request), ConfigMaps (a Spark run's plan and
progress), namespace labels (KafkaCluster grants by namespaceSelector)."""

from __future__ import annotations

import base64
from typing import Any

from kubernetes import client

from ebb_operator.kube.client import api_client
from ebb_operator.kube.errors import AlreadyExistsError, translated


def _core() -> client.CoreV1Api:
    return client.CoreV1Api(api_client())


@translated
def read_secret(namespace: str, name: str) -> dict[str, str]:
    """A Secret's data, decoded."""
    secret = _core().read_namespaced_secret(name, namespace)
    data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    data.update(secret.string_data or {})
    return data


@translated
def create_secret(
    namespace: str,
    name: str,
    data: dict[str, str],
    labels: dict[str, str],
    *,
    secret_type: str = "Opaque",
) -> None:
    meta = client.V1ObjectMeta(name=name, namespace=namespace, labels=labels)
    _core().create_namespaced_secret(
        namespace, client.V1Secret(metadata=meta, type=secret_type, string_data=data)
    )


@translated
def patch_secret(
    namespace: str,
    name: str,
    *,
    data: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> None:
    """Merge-patch a Secret: these data keys (others stay), these annotations."""
    body: dict[str, Any] = {}
    if data is not None:
        body["stringData"] = data
    if annotations is not None:
        body["metadata"] = {"annotations": annotations}
    _core().patch_namespaced_secret(name, namespace, body)


@translated
def read_config_map_data(namespace: str, name: str) -> dict[str, str]:
    return dict(_core().read_namespaced_config_map(name, namespace).data or {})


@translated
def upsert_config_map(
    namespace: str, name: str, data: dict[str, str], labels: dict[str, str], owner: dict[str, Any] | None
) -> None:
    """Create the ConfigMap, or replace its data if it exists (a retried run writes its plan again)."""
    meta = client.V1ObjectMeta(
        name=name, namespace=namespace, labels=labels, owner_references=[owner] if owner else None
    )
    body = client.V1ConfigMap(metadata=meta, data=data)
    try:
        translated(_core().create_namespaced_config_map)(namespace, body)
    except AlreadyExistsError:
        _core().replace_namespaced_config_map(name, namespace, body)


@translated
def create_config_map(namespace: str, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
    meta = client.V1ObjectMeta(name=name, namespace=namespace, labels=labels)
    _core().create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=meta, data=data))


@translated
def patch_config_map_data(namespace: str, name: str, data: dict[str, str]) -> None:
    """Merge `data` into the ConfigMap's: its other keys, labels and owner stay."""
    _core().patch_namespaced_config_map(name, namespace, {"data": data})


@translated
def config_map_labels(namespace: str, label_selector: str) -> list[dict[str, str]]:
    """The labels of each ConfigMap the selector matches."""
    listed = _core().list_namespaced_config_map(namespace, label_selector=label_selector)
    return [dict((cm.metadata.labels if cm.metadata else None) or {}) for cm in listed.items]


@translated
def delete_labelled(namespace: str, label_selector: str) -> None:
    """Delete the Secrets and ConfigMaps the selector matches (deletecollection: no right to read them)."""
    _core().delete_collection_namespaced_secret(namespace, label_selector=label_selector)
    _core().delete_collection_namespaced_config_map(namespace, label_selector=label_selector)


@translated
def namespace_labels(name: str) -> dict[str, str]:
    meta = _core().read_namespace(name).metadata
    return dict((meta.labels if meta else None) or {})
