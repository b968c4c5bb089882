"""From an object's `spec.cluster` to a ClusterConnection: the one place Secrets meet the kafka adapter."""

from __future__ import annotations

import asyncio

from kubernetes.client import ApiException

from ebb_operator.handlers import kube
from ebb_operator.kafka import ClusterConfigError, ClusterConnection
from ebb_operator.models.common import ClusterRef


class ClusterSecretError(ClusterConfigError):
    """The referenced Secret cannot be read (missing, forbidden)."""


async def connection_for(cluster: ClusterRef | None, namespace: str) -> ClusterConnection:
    """bootstrapServers and the Secret's client properties, or the operator's default cluster."""
    properties: dict[str, str] = {}
    if cluster is not None and cluster.secret_ref is not None:
        try:
            properties = await asyncio.to_thread(kube.read_secret, namespace, cluster.secret_ref.name)
        except ApiException as exc:
            raise ClusterSecretError(
                f"cannot read Secret {namespace}/{cluster.secret_ref.name}: {exc.status} {exc.reason}"
            ) from exc
    return ClusterConnection.resolve(cluster.bootstrap_servers if cluster else None, properties)


def cluster_key(cluster: ClusterRef | None) -> str:
    """Identity of a target cluster for conflict detection (same bootstrap list = same cluster)."""
    if cluster is None or cluster.bootstrap_servers is None:
        return "<default>"
    return ",".join(sorted(cluster.bootstrap_servers.split(",")))
