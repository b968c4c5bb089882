"""The operator's one door to the Kubernetes API besides kopf: the only package that imports `kubernetes`.

Everything here is synchronous (the `kubernetes` client is): async callers run it in a thread. Calls
raise `KubeApiError` (with `NotFoundError`, `AlreadyExistsError`, `ForbiddenError`) instead of the
client's ApiException, so no other module needs the client's types.
"""

from __future__ import annotations

from ebb_operator.kube.client import api_client, reset_client
from ebb_operator.kube.core import (
    create_secret,
    delete_config_map,
    delete_secret,
    namespace_labels,
    patch_secret,
    read_config_map_data,
    read_secret,
    upsert_config_map,
)
from ebb_operator.kube.custom_objects import (
    apply_object,
    create_object,
    delete_object,
    get_object,
    list_objects,
    patch_object,
    patch_status,
)
from ebb_operator.kube.errors import AlreadyExistsError, ForbiddenError, KubeApiError, NotFoundError
from ebb_operator.kube.resources import (
    CLUSTER_LABEL,
    POLICY_LABEL,
    RUN_LABEL,
    SPARK_APPLICATIONS,
    ObjectRef,
    Resource,
    owner_reference,
)

__all__ = [
    "CLUSTER_LABEL",
    "POLICY_LABEL",
    "RUN_LABEL",
    "SPARK_APPLICATIONS",
    "AlreadyExistsError",
    "ForbiddenError",
    "KubeApiError",
    "NotFoundError",
    "ObjectRef",
    "Resource",
    "api_client",
    "apply_object",
    "create_object",
    "create_secret",
    "delete_config_map",
    "delete_object",
    "delete_secret",
    "get_object",
    "list_objects",
    "namespace_labels",
    "owner_reference",
    "patch_object",
    "patch_secret",
    "patch_status",
    "read_config_map_data",
    "read_secret",
    "reset_client",
    "upsert_config_map",
]
