"""The kinds the operator touches, how it names and labels what it creates, and owner references."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ebb_operator.models.common import GROUP, VERSION

POLICY_LABEL = f"{GROUP}/retention-policy"  # on a policy's DeleteRecords and its runs' objects
RUN_LABEL = f"{GROUP}/run-id"
# A run's objects in the jobs namespace cannot have their policy as owner (owner references never cross
# namespaces): these labels name it, and cleanup selects by them.
POLICY_NAMESPACE_LABEL = f"{GROUP}/policy-namespace"
POLICY_UID_LABEL = f"{GROUP}/policy-uid"
CLUSTER_LABEL = f"{GROUP}/kafka-cluster"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @classmethod
    def ebb(cls, plural: str, kind: str) -> Resource:
        return cls(GROUP, VERSION, plural, kind)


SPARK_APPLICATIONS = Resource("sparkoperator.k8s.io", "v1beta2", "sparkapplications", "SparkApplication")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")


@dataclass(frozen=True)
class ObjectRef:
    """A namespaced object of one of the operator's kinds (namespace '' for cluster-scoped ones)."""

    resource: Resource
    namespace: str
    name: str


def owner_reference(resource: Resource, name: str, uid: str) -> dict[str, Any]:
    """A controller reference: the owned object goes with its owner (garbage collection)."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
