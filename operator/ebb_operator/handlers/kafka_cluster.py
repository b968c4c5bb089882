"""KafkaCluster reconciliation: can the operator reach the cluster, what is its id, who uses it.

Level-based: on every change and every resync the entry's cluster is described (DescribeCluster, with
the credentials of its Secret in the operator's namespace) and the status says what was seen: Ready, the
cluster id (the identity CompactionConfig ownership uses), the broker count, and the namespaces whose
objects name it (from kopf's indexes of the three tenant kinds, no listing).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import metrics
from ebb_operator.handlers import cluster
from ebb_operator.handlers.runtime import Runtime, runtime
from ebb_operator.handlers.status import StatusWriter
from ebb_operator.kafka import ClusterConfigError, ClusterConnection
from ebb_operator.models.common import GROUP, VERSION, ConditionStatus, now_rfc3339
from ebb_operator.models.compaction_config import CRD as CC_CRD
from ebb_operator.models.delete_records import CRD as DR_CRD
from ebb_operator.models.kafka_cluster import CRD, KafkaClusterSpec, KafkaClusterStatus, Usage
from ebb_operator.models.reasons import Reason
from ebb_operator.models.retention_policy import CRD as RP_CRD

RESOURCE = cluster.KAFKA_CLUSTERS
KIND = CRD.kind


def _cluster_of(body: kopf.Body, memo: kopf.Memo) -> str | None:
    """The KafkaCluster a tenant object acts on (None for an inline cluster)."""
    spec = body.get("spec") or {}
    if spec.get("cluster") is not None:
        return None
    ref = (spec.get("clusterRef") or {}).get("name")
    if ref:
        return str(ref)
    rt = memo.get("runtime")
    return rt.settings.default_cluster if isinstance(rt, Runtime) else None


def _index(body: kopf.Body, namespace: str | None, memo: kopf.Memo, **_: Any) -> dict[str, str]:
    name = _cluster_of(body, memo)
    return {name: namespace or ""} if name else {}


for _crd in (DR_CRD, CC_CRD, RP_CRD):
    kopf.index(GROUP, VERSION, _crd.plural, id=f"{_crd.singular}_clusters")(_index)


@metrics.reconciles(KIND)
async def reconcile(rt: Runtime, body: kopf.Body, usage: Counter[str]) -> None:
    name = body.metadata.name or ""
    out = StatusWriter(body, RESOURCE, KafkaClusterStatus.model_validate(dict(body.get("status") or {})))
    out.status.used_by = [Usage(namespace=ns, objects=n) for ns, n in sorted(usage.items())]
    out.status.last_checked = now_rfc3339()
    try:
        spec = KafkaClusterSpec.model_validate(dict(body.spec))
        connection = ClusterConnection.of(spec.bootstrap_servers, await cluster.credentials(rt, name, spec))
        description = await rt.admins.call(
            connection, lambda a: (a.cluster_id(), len(a.metadata([]).brokers))
        )
    except (ValidationError, ClusterConfigError, cluster.ClusterUnreachable) as exc:
        await out.failed(exc)
        return
    except Exception as exc:
        await out.failed(
            cluster.ClusterUnreachable(f"cannot reach {body.spec.get('bootstrapServers')}: {exc}")
        )
        return
    cluster_id, brokers = description
    rt.cluster_ids[name] = cluster_id
    out.status.cluster_id, out.status.brokers = cluster_id, brokers
    users = ", ".join(u.namespace for u in out.status.used_by) or "no namespace yet"
    await out.write(
        ConditionStatus.TRUE, Reason.CONNECTED, f"cluster {cluster_id}, {brokers} broker(s); used by {users}"
    )


def _usage(name: str, indexes: tuple[kopf.Index[str, str], ...]) -> Counter[str]:
    usage: Counter[str] = Counter()
    for index in indexes:
        for namespace in index.get(name, ()):
            usage[namespace] += 1
    return usage


@kopf.on.create(GROUP, VERSION, CRD.plural, id="kafkacluster-create")
@kopf.on.update(GROUP, VERSION, CRD.plural, id="kafkacluster-update")  # type: ignore[arg-type]  # index kwargs
async def kafkacluster_changed(
    body: kopf.Body,
    memo: kopf.Memo,
    deleterecords_clusters: kopf.Index[str, str],
    compactionconfig_clusters: kopf.Index[str, str],
    retentionpolicy_clusters: kopf.Index[str, str],
    **_: Any,
) -> None:
    indexes = (deleterecords_clusters, compactionconfig_clusters, retentionpolicy_clusters)
    await reconcile(runtime(memo), body, _usage(body.metadata.name or "", indexes))


async def kafkacluster_resync(
    body: kopf.Body,
    memo: kopf.Memo,
    deleterecords_clusters: kopf.Index[str, str],
    compactionconfig_clusters: kopf.Index[str, str],
    retentionpolicy_clusters: kopf.Index[str, str],
    **_: Any,
) -> None:
    """Registered as a timer by handlers.register (its interval is an operator setting)."""
    indexes = (deleterecords_clusters, compactionconfig_clusters, retentionpolicy_clusters)
    await reconcile(runtime(memo), body, _usage(body.metadata.name or "", indexes))
