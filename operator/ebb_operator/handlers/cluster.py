"""From a tenant object's cluster fields to a connection it may use and what its namespace may do there.

`spec.clusterRef.name` names a KafkaCluster (the admin's registry); its credentials are read from a
Secret in the operator's own namespace, and its grants decide the namespace's Access. Without a
clusterRef the operator's default KafkaCluster applies. The inline `spec.cluster` (its Secret in the
object's own namespace) is accepted only where the operator allows inline clusters, for single-team
installs; it is then unrestricted. A KafkaCluster or Secret that does not exist is ClusterNotFound: the
object waits for it. `access` is what the admission webhook asks (no Secret read); `resolve` what a
reconcile needs. Nothing here talks to Kafka except `cluster_id`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ebb_operator import kube
from ebb_operator.access import Access, Forbidden, access_for
from ebb_operator.handlers.errors import ClusterNotFound, ClusterUnreachable
from ebb_operator.handlers.runtime import Runtime
from ebb_operator.kafka import ClusterConnection
from ebb_operator.models.common import ClusterRef, KafkaClusterRef
from ebb_operator.models.kafka_cluster import CRD as KC_CRD
from ebb_operator.models.kafka_cluster import KafkaClusterSpec

KAFKA_CLUSTERS = kube.Resource.ebb(KC_CRD.plural, KC_CRD.kind)


@dataclass(frozen=True)
class Target:
    """The cluster an object acts on: how to connect, what its namespace may do, how it is named."""

    connection: ClusterConnection
    access: Access
    reference: str  # the KafkaCluster's name, or "inline:<bootstrap servers>"
    analysis_secret: str | None = None  # the KafkaCluster's analysisCredentials Secret, if it names one


async def kafka_cluster_spec(name: str) -> KafkaClusterSpec:
    try:
        obj = await asyncio.to_thread(kube.get_object, kube.ObjectRef(KAFKA_CLUSTERS, "", name))
    except kube.NotFoundError:
        raise ClusterNotFound(f"KafkaCluster {name} does not exist (yet)") from None
    return KafkaClusterSpec.model_validate(obj.get("spec") or {})


async def _read_secret(namespace: str, name: str, owner: str) -> dict[str, str]:
    try:
        return await asyncio.to_thread(kube.read_secret, namespace, name)
    except kube.NotFoundError:
        raise ClusterNotFound(f"{owner}Secret {namespace}/{name} does not exist (yet)") from None
    except kube.KubeApiError as exc:
        raise ClusterUnreachable(f"{owner}cannot read Secret {namespace}/{name}: {exc}") from exc


async def credentials(rt: Runtime, name: str, spec: KafkaClusterSpec) -> dict[str, str]:
    """The KafkaCluster's client properties, from its Secret in the operator's namespace."""
    return (
        {}
        if spec.credentials is None
        else await _read_secret(
            rt.settings.namespace, spec.credentials.secret_ref.name, f"KafkaCluster {name}: "
        )
    )


async def analysis_connection(rt: Runtime, target: Target) -> ClusterConnection:
    """How an analysis run connects: with the KafkaCluster's read-only analysisCredentials where it names
    them (the cluster's own credentials then never leave the operator), else as the operator does."""
    if target.analysis_secret is None:
        return target.connection
    owner = f"KafkaCluster {target.reference}: "
    props = await _read_secret(rt.settings.namespace, target.analysis_secret, owner)
    return ClusterConnection.of(target.connection.bootstrap_servers, props)


def _inline_allowed(rt: Runtime) -> None:
    if not rt.settings.allow_inline_clusters:
        raise Forbidden(
            "spec.cluster (an inline cluster) is not allowed by this operator "
            "(operator.allowInlineClusters): name a KafkaCluster in spec.clusterRef"
        )


def _cluster_name(rt: Runtime, cluster_ref: KafkaClusterRef | None) -> str | None:
    """The KafkaCluster the object acts on; None: the default inline cluster (single-team installs)."""
    settings = rt.settings
    name = cluster_ref.name if cluster_ref is not None else settings.default_cluster
    if name is None and not (settings.allow_inline_clusters and settings.default_bootstrap_servers):
        raise ClusterUnreachable(
            "name a KafkaCluster in spec.clusterRef (the operator has no default cluster)"
        )
    return name


async def _access_on(
    name: str, spec: KafkaClusterSpec, namespace: str, cluster_ref: KafkaClusterRef | None
) -> Access:
    labels = await asyncio.to_thread(kube.namespace_labels, namespace) if _needs_labels(spec) else {}
    return access_for(name, spec, namespace, labels, "spec.clusterRef.name" if cluster_ref else "")


async def access(
    rt: Runtime, namespace: str, cluster_ref: KafkaClusterRef | None, inline: ClusterRef | None
) -> Access:
    """What the namespace may do on the object's cluster, without reading any Secret (the admission
    webhook); Forbidden, ClusterUnreachable or ClusterNotFound as `resolve` raises them."""
    if inline is not None:
        _inline_allowed(rt)
        return Access.inline(namespace)
    name = _cluster_name(rt, cluster_ref)
    if name is None:
        return Access.inline(namespace)
    return await _access_on(name, await kafka_cluster_spec(name), namespace, cluster_ref)


async def resolve(
    rt: Runtime,
    namespace: str,
    cluster_ref: KafkaClusterRef | None,
    inline: ClusterRef | None,
    *,
    undoing: bool = False,
) -> Target:
    """The object's target; Forbidden, ClusterUnreachable (ClusterNotFound) or ClusterConfigError when it
    has none. `undoing`: only to undo what Ebb did for the object (lift its client quotas), which needs no
    grant: a namespace whose grant is gone gets an Access that allows nothing."""
    settings = rt.settings
    if inline is not None:
        if not undoing:
            _inline_allowed(rt)
        props: dict[str, str] = {}
        if inline.secret_ref is not None:
            props = await _read_secret(namespace, inline.secret_ref.name, "")
        servers = inline.bootstrap_servers or settings.default_bootstrap_servers
        return Target(ClusterConnection.of(servers, props), Access.inline(namespace), f"inline:{servers}")
    name = _cluster_name(rt, cluster_ref)
    if name is None:
        servers = settings.default_bootstrap_servers
        return Target(ClusterConnection.of(servers), Access.inline(namespace), f"inline:{servers}")
    spec = await kafka_cluster_spec(name)
    try:
        access = await _access_on(name, spec, namespace, cluster_ref)
    except Forbidden:
        if not undoing:
            raise
        access = Access(name, namespace)
    connection = ClusterConnection.of(spec.bootstrap_servers, await credentials(rt, name, spec))
    analysis = spec.analysis_credentials.secret_ref.name if spec.analysis_credentials else None
    return Target(connection, access, name, analysis)


def _needs_labels(spec: KafkaClusterSpec) -> bool:
    return any(g.namespace_selector is not None for g in spec.access)


async def cluster_id(rt: Runtime, target: Target) -> str:
    """DescribeCluster's id of the target (cached per reference): two spellings of one cluster agree."""
    found = rt.cluster_ids.get(target.reference)
    if found is None:
        found = await rt.admins.call(target.connection, lambda admin: admin.cluster_id())
        rt.cluster_ids[target.reference] = found
    return found
