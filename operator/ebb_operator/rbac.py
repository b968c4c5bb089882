"""The exact Kubernetes permissions of the operator and of tenants, in one place.

`make crds` writes them to charts/ebb/files/*.yaml, which the Helm chart renders into its ClusterRoles and
Roles; the k8s tests run the operator and the tenants under ServiceAccounts bound to exactly these rules.

Least privilege: the operator reads Secrets only in its own namespace (the KafkaClusters' credentials),
and touches no Secret in a tenant's: a SparkApplication run's request is a Secret of the jobs namespace,
which it creates and deletes there without the right to read it back. Reading Secrets in tenant
namespaces is added only where inline clusters are allowed (single-team installs: `spec.cluster.secretRef`
names a Secret of the object's namespace).
"""

from __future__ import annotations

from typing import Any

import yaml

from ebb_operator.models import TENANT_CRDS
from ebb_operator.models.common import GROUP

WEBHOOK_SECRET = "ebb-webhook-tls"  # the webhook's own certificate, in the operator's namespace
WEBHOOK_CONFIGURATION = GROUP  # ValidatingWebhookConfiguration ebb.dev

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
    # A policy's memory of its empty groups across runs (a ConfigMap beside it).
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]},
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

# The admission webhook without cert-manager: the operator's own CA and certificate live in one Secret of
# its namespace (a Role there), created by the first replica, renewed in place; and the CA goes into
# ValidatingWebhookConfiguration ebb.dev, the one the chart renders (a ClusterRole, by name). Patching
# that configuration is what a cluster-wide CA injector (cert-manager's) otherwise does.
WEBHOOK_CERTIFICATE_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [WEBHOOK_SECRET], "verbs": ["update"]},
]
WEBHOOK_CA_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "resourceNames": [WEBHOOK_CONFIGURATION],
        "verbs": ["get", "patch"],
    }
]
# A local process registering the configuration itself (EBB_WEBHOOK_MANAGED: tests): created, pointed at
# the process, deleted when it stops. The chart never grants these; under the chart's rules a local process
# (`make demo`) points the chart's configuration at itself with WEBHOOK_CA_RULES alone.
WEBHOOK_MANAGED_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "verbs": ["create"],
    },
    {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "resourceNames": [WEBHOOK_CONFIGURATION],
        "verbs": ["get", "patch", "delete"],
    },
]

# In the operator's own namespace only (a Role): leader election (ebb_operator/leader.py). Every replica
# reads the Lease and writes it to take or renew it; the leader posts an Event on it when it changes.
LEADER_ELECTION_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]

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

# In the jobs namespace only (a Role): SparkApplication runs, whose objects never live in a tenant's.
JOB_NAMESPACE_RULES: list[dict[str, Any]] = [
    # One SparkApplication per run, followed through its status, pruned (historyLimit), deleted with its
    # policy (by the labels naming it: owner references cannot cross namespaces).
    {
        "apiGroups": ["sparkoperator.k8s.io"],
        "resources": ["sparkapplications"],
        "verbs": ["get", "list", "create", "delete", "deletecollection"],
    },
    # A run's request (connection included) is a Secret the driver mounts: created and deleted by the
    # operator, never read back (no get, no list).
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "deletecollection"]},
    # A run's ConfigMap, where the driver leaves its progress and plan: created, read, deleted; listed (its
    # labels) to find the runs of deleted policies.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "deletecollection"]},
]

# The Spark driver's ServiceAccount in the jobs namespace: what spark-submit on Kubernetes needs to run
# executors (pods, their services, ConfigMaps, volume claims); the analysis job itself only patches its
# run's ConfigMap (progress, plan).
SPARK_DRIVER_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": [""],
        "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
        "verbs": ["get", "list", "watch", "create", "delete", "deletecollection", "patch", "update"],
    }
]

FILES: dict[str, list[dict[str, Any]]] = {
    "operator-namespaced-rules.yaml": NAMESPACED_RULES,
    "operator-cluster-scoped-rules.yaml": CLUSTER_SCOPED_RULES,
    "operator-own-namespace-rules.yaml": OWN_NAMESPACE_RULES,
    "operator-leader-election-rules.yaml": LEADER_ELECTION_RULES,
    "operator-inline-cluster-rules.yaml": INLINE_CLUSTER_RULES,
    "operator-webhook-certificate-rules.yaml": WEBHOOK_CERTIFICATE_RULES,
    "operator-webhook-ca-rules.yaml": WEBHOOK_CA_RULES,
    "operator-job-namespace-rules.yaml": JOB_NAMESPACE_RULES,
    "spark-driver-rules.yaml": SPARK_DRIVER_RULES,
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


def leader_election_role(name: str, namespace: str, account: str) -> list[dict[str, Any]]:
    """The Role with LEADER_ELECTION_RULES in the operator's namespace, bound to its ServiceAccount."""
    meta = {"name": name, "namespace": namespace}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
         "rules": LEADER_ELECTION_RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]},
    ]  # fmt: skip


def rules_yaml(rules: list[dict[str, Any]] | None = None) -> str:
    header = "# Generated by `make crds` from ebb_operator.rbac. Do not edit.\n"
    return header + yaml.safe_dump(RULES if rules is None else rules, sort_keys=False)
