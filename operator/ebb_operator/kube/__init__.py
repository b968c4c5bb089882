"""The operator's one door to the Kubernetes API besides kopf: the only package that imports `kubernetes`.

Everything here is synchronous (the `kubernetes` client is): async callers run it in a thread. Calls
raise `KubeApiError` (with `NotFoundError`, `AlreadyExistsError`, `ForbiddenError`) instead of the
client's ApiException, so no other module needs the client's types.
"""

from __future__ import annotations

from ebb_operator.kube.admission import (
    apply_webhook_configuration,
    create_tls_secret,
    delete_webhook_configuration,
    read_tls_secret,
    read_webhook_configuration,
    replace_tls_secret,
    set_webhook_ca_bundle,
)
from ebb_operator.kube.client import api_client, reset_client
from ebb_operator.kube.core import (
    config_map_labels,
    create_config_map,
    create_secret,
    delete_labelled,
    namespace_labels,
    patch_config_map_data,
    patch_secret,
    read_config_map_data,
    read_secret,
    upsert_config_map,
)
from ebb_operator.kube.custom_objects import (
    apply_object,
    create_object,
    delete_object,
    delete_objects,
    get_object,
    list_objects,
    patch_object,
    patch_status,
)
from ebb_operator.kube.errors import AlreadyExistsError, ForbiddenError, KubeApiError, NotFoundError
from ebb_operator.kube.events import post_event
from ebb_operator.kube.leases import create_lease, read_lease, replace_lease
from ebb_operator.kube.resources import (
    CLUSTER_LABEL,
    LEASES,
    POLICY_LABEL,
    POLICY_NAMESPACE_LABEL,
    POLICY_UID_LABEL,
    RUN_LABEL,
    SPARK_APPLICATIONS,
    ObjectRef,
    Resource,
    owner_reference,
)

__all__ = [
    "CLUSTER_LABEL",
    "LEASES",
    "POLICY_LABEL",
    "POLICY_NAMESPACE_LABEL",
    "POLICY_UID_LABEL",
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
    "apply_webhook_configuration",
    "config_map_labels",
    "create_config_map",
    "create_lease",
    "create_object",
    "create_secret",
    "create_tls_secret",
    "delete_labelled",
    "delete_object",
    "delete_objects",
    "delete_webhook_configuration",
    "get_object",
    "list_objects",
    "namespace_labels",
    "owner_reference",
    "patch_config_map_data",
    "patch_object",
    "patch_secret",
    "patch_status",
    "post_event",
    "read_config_map_data",
    "read_lease",
    "read_secret",
    "read_tls_secret",
    "read_webhook_configuration",
    "replace_lease",
    "replace_tls_secret",
    "reset_client",
    "set_webhook_ca_bundle",
    "upsert_config_map",
]
