"""Custom objects: the operator's own kinds and SparkApplications."""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client

from ebb_operator.kube.client import api_client
from ebb_operator.kube.errors import translated
from ebb_operator.kube.resources import ObjectRef, Resource


def _api() -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client())


# The client types custom objects as `object`; the API server returns the object's JSON (a dict).


@translated
def get_object(ref: ObjectRef) -> dict[str, Any]:
    r = ref.resource
    if not ref.namespace:
        return cast(
            "dict[str, Any]", _api().get_cluster_custom_object(r.group, r.version, r.plural, ref.name)
        )
    obj = _api().get_namespaced_custom_object(r.group, r.version, ref.namespace, r.plural, ref.name)
    return cast("dict[str, Any]", obj)


@translated
def list_objects(resource: Resource, namespace: str = "", label_selector: str = "") -> list[dict[str, Any]]:
    """Objects of one kind (in one namespace, or cluster-wide/cluster-scoped with ''), oldest first."""
    r = resource
    if namespace:
        listed = _api().list_namespaced_custom_object(
            r.group, r.version, namespace, r.plural, label_selector=label_selector
        )
    else:
        listed = _api().list_cluster_custom_object(
            r.group, r.version, r.plural, label_selector=label_selector
        )
    items = cast("list[dict[str, Any]]", cast("dict[str, Any]", listed)["items"])
    return sorted(items, key=lambda o: (o["metadata"]["creationTimestamp"], o["metadata"]["name"]))


@translated
def create_object(resource: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    r = resource
    obj = _api().create_namespaced_custom_object(r.group, r.version, namespace, r.plural, body)
    return cast("dict[str, Any]", obj)


@translated
def delete_object(ref: ObjectRef) -> None:
    r = ref.resource
    _api().delete_namespaced_custom_object(r.group, r.version, ref.namespace, r.plural, ref.name)


@translated
def delete_objects(resource: Resource, namespace: str, label_selector: str) -> None:
    """Delete every object of one kind in `namespace` that the selector matches."""
    r = resource
    _api().delete_collection_namespaced_custom_object(
        r.group, r.version, namespace, r.plural, label_selector=label_selector
    )


@translated
def patch_status(ref: ObjectRef, status: dict[str, Any]) -> dict[str, Any]:
    """Merge-patch the status subresource; lists (conditions, partitions) are replaced whole.

    kopf applies `patch` only after a handler returns; DeleteRecords must record its plan in status
    *before* it deletes anything (so a restart resumes the same plan), hence a direct status patch.
    """
    r = ref.resource
    if not ref.namespace:
        obj = _api().patch_cluster_custom_object_status(
            r.group, r.version, r.plural, ref.name, {"status": status}
        )
    else:
        obj = _api().patch_namespaced_custom_object_status(
            r.group, r.version, ref.namespace, r.plural, ref.name, {"status": status}
        )
    return cast("dict[str, Any]", obj)


@translated
def apply_object(resource: Resource, body: dict[str, Any], field_manager: str) -> dict[str, Any]:
    """Server-side apply (forced): create the object, or make the fields `body` names these values."""
    r, name = resource, body["metadata"]["name"]
    namespace = body["metadata"].get("namespace")
    kwargs: dict[str, Any] = {
        "field_manager": field_manager,
        "force": True,
        "_content_type": "application/apply-patch+yaml",
    }
    if namespace:
        obj = _api().patch_namespaced_custom_object(
            r.group, r.version, namespace, r.plural, name, body, **kwargs
        )
    else:
        obj = _api().patch_cluster_custom_object(r.group, r.version, r.plural, name, body, **kwargs)
    if obj is None:  # 201 (the apply created it): the client maps only 200 to a body
        return get_object(ObjectRef(resource, namespace or "", name))
    return cast("dict[str, Any]", obj)


@translated
def patch_object(ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]:
    """Merge-patch an object (a `metadata.resourceVersion` in the patch makes it conditional: 409)."""
    r = ref.resource
    if ref.namespace:
        obj = _api().patch_namespaced_custom_object(
            r.group, r.version, ref.namespace, r.plural, ref.name, patch
        )
    else:
        obj = _api().patch_cluster_custom_object(r.group, r.version, r.plural, ref.name, patch)
    return cast("dict[str, Any]", obj)
