"""The exact Kubernetes permissions of the operator and of tenants, in one place.

`make crds` writes them to charts/ebb/files/*.yaml, which the Helm chart renders into its ClusterRoles and
Roles; the k8s tests run the operator and the tenants under ServiceAccounts bound to exactly these rules.

Least privilege: the operator reads Secrets only in its own namespace (the KafkaClusters' credentials);
cluster-wide it may create and delete Secrets (a SparkApplication run's request, in the policy's
namespace) but not read them. Reading Secrets in tenant namespaces is added only where inline clusters
are allowed (single-team installs: `spec.cluster.secretRef` names a Secret of the object's namespace).
"""

from __future__ import annotations

from typing import Any

import yaml

from ebb_operator.models import TENANT_CRDS
from ebb_operator.models.common import GROUP

_TENANT = sorted(info.plural for info in TENANT_CRDS)

# What the operator needs in every namespace it serves (a ClusterRole, or a Role per watched namespace).
NAMESPACED_RULES: list[dict[str, Any]] = [
    # Watch the tenant kinds; patch them for kopf's progress/diff-base annotations and finalizer.
    {"apiGroups": [GROUP], "resources": _TENANT, "verbs": ["get", "list", "watch", "patch"]},
    # Status is written through the status subresource.
    {
        "apiGroups": [GROUP],
        "resources": [f"{p}/status" for p in _TENANT],
        "verbs": ["get", "patch", "update"],
    },
    # RetentionPolicy runs: the operator creates each run's DeleteRecords from the plan the analysis job
    # hands back, and deletes old ones beyond historyLimit (no reliance on garbage collection).
    {"apiGroups": [GROUP], "resources": ["deleterecords"], "verbs": ["create", "delete"]},
    # engine SparkApplication: one SparkApplication per run, followed through its status, pruned.
    {
        "apiGroups": ["sparkoperator.k8s.io"],
        "resources": ["sparkapplications"],
        "verbs": ["get", "list", "watch", "create", "delete"],
    },
    # A SparkApplication run's request (connection included) is a Secret the driver mounts: created and
    # deleted by the operator, never read back (no get).
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "delete"]},
    # The plan a SparkApplication run leaves in a ConfigMap, read then deleted; a policy's memory of its
    # empty groups across runs.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update", "delete"]},
    # Events for every action that deletes data or changes configs (kopf posts core/v1 Events).
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]

# Cluster-scoped, always in a ClusterRole.
CLUSTER_SCOPED_RULES: list[dict[str, Any]] = [
    # The KafkaCluster registry: watched and its status written; never created by the operator.
    {"apiGroups": [GROUP], "resources": ["kafkaclusters"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [GROUP], "resources": ["kafkaclusters/status"], "verbs": ["get", "patch", "update"]},
    # kopf resolves the namespaces it serves (--namespace patterns) and follows their creation; grants
    # may select namespaces by label (get).
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
    # kopf notices CRDs installed or removed while it runs.
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
    },
]

RULES: list[dict[str, Any]] = [*NAMESPACED_RULES, *CLUSTER_SCOPED_RULES]

# In the operator's own namespace only (a Role): the KafkaClusters' credentials.
OWN_NAMESPACE_RULES: list[dict[str, Any]] = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]

# Only with operator.allowInlineClusters (single-team installs): spec.cluster.secretRef in any namespace.
INLINE_CLUSTER_RULES: list[dict[str, Any]] = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]

# Tenants, aggregated into Kubernetes' edit/admin and view roles (so a namespace's editors may use the
# three tenant kinds there). KafkaCluster is in neither: it is written by cluster admins only.
TENANT_EDIT_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": [GROUP],
        "resources": _TENANT,
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
    },
    {"apiGroups": [GROUP], "resources": [f"{p}/status" for p in _TENANT], "verbs": ["get"]},
]
TENANT_VIEW_RULES: list[dict[str, Any]] = [
    {"apiGroups": [GROUP], "resources": _TENANT, "verbs": ["get", "list", "watch"]},
    {"apiGroups": [GROUP], "resources": [f"{p}/status" for p in _TENANT], "verbs": ["get"]},
]

# The chart's install hook Jobs (ebb_operator.install), in the release namespace: the broker's credentials
# Secrets, made once and read back; then, cluster-wide, the default KafkaCluster they apply.
INSTALL_HOOK_NAMESPACE_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch"]},
]
INSTALL_HOOK_CLUSTER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [GROUP], "resources": ["kafkaclusters"], "verbs": ["get", "create", "patch"]},
]
# The uninstall hook: Ebb's finalizer off every Ebb object, wherever it is.
UNINSTALL_HOOK_RULES: list[dict[str, Any]] = [
    {"apiGroups": [GROUP], "resources": [*_TENANT, "kafkaclusters"], "verbs": ["get", "list", "patch"]},
]

FILES: dict[str, list[dict[str, Any]]] = {
    "operator-namespaced-rules.yaml": NAMESPACED_RULES,
    "operator-cluster-scoped-rules.yaml": CLUSTER_SCOPED_RULES,
    "operator-own-namespace-rules.yaml": OWN_NAMESPACE_RULES,
    "operator-inline-cluster-rules.yaml": INLINE_CLUSTER_RULES,
    "tenant-edit-rules.yaml": TENANT_EDIT_RULES,
    "tenant-view-rules.yaml": TENANT_VIEW_RULES,
    "install-hook-namespace-rules.yaml": INSTALL_HOOK_NAMESPACE_RULES,
    "install-hook-cluster-rules.yaml": INSTALL_HOOK_CLUSTER_RULES,
    "uninstall-hook-rules.yaml": UNINSTALL_HOOK_RULES,
}


def cluster_role(name: str = "ebb-operator") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": RULES,
    }


def rules_yaml(rules: list[dict[str, Any]] | None = None) -> str:
    header = "# Generated by `make crds` from ebb_operator.rbac. Do not edit.\n"
    return header + yaml.safe_dump(RULES if rules is None else rules, sort_keys=False)
