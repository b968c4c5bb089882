"""The validating admission webhook: a spec the reconciler would refuse is refused at `kubectl apply`.

Each kind's handler parses the spec with the same model and asks the same grant checks
(ebb_operator.access) the reconciler asks, so `kubectl apply` and the Ready condition never disagree; the
refusal is the line the Ready condition would carry (field, value, rule). What only the cluster knows
(the topics a pattern matches now) is left to the reconciler, which also refuses anything stored while
the webhook was unreachable. A KafkaCluster that does not exist yet is no refusal: GitOps tools apply
objects in any order, so the object is admitted with a warning and waits (ClusterNotFound).

Registered by `handlers.register` only when the webhook is on (EBB_WEBHOOK_PORT): kopf refuses to start
with admission handlers and no server. Served by every replica: the handlers read the API, never a
leader's in-memory state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import kube
from ebb_operator.access import Access, Forbidden
from ebb_operator.handlers import cluster
from ebb_operator.handlers.errors import ClusterNotFound, ClusterUnreachable
from ebb_operator.handlers.runtime import Runtime, runtime
from ebb_operator.models import ALL_CRDS, TENANT_CRDS
from ebb_operator.models.common import GROUP, VERSION, ClusterRef, KafkaClusterRef
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.crd import CrdInfo
from ebb_operator.models.delete_records import DeleteRecordsSpec
from ebb_operator.models.kafka_cluster import KafkaClusterSpec
from ebb_operator.models.retention_policy import RetentionPolicySpec
from ebb_operator.models.validation import explain
from ebb_operator.webhook import configuration


class Refused(Exception):
    """The request is refused; the message is the one line `kubectl` shows, `code` the HTTP status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


TenantSpec = DeleteRecordsSpec | CompactionConfigSpec | RetentionPolicySpec


def _check(spec: TenantSpec) -> Callable[[Access], None]:
    """The reconciler's own grant check of the spec, without the cluster's topics."""
    if isinstance(spec, DeleteRecordsSpec):
        return lambda access: access.check_delete_records(spec)
    if isinstance(spec, CompactionConfigSpec):
        return lambda access: access.check_compaction(spec)
    return lambda access: access.check_retention_policy(spec)


async def review(rt: Runtime, info: CrdInfo, namespace: str, raw_spec: dict[str, Any]) -> list[str]:
    """The warnings of an admitted spec; Refused with the reason for a refused one."""
    try:
        spec = info.spec.model_validate(raw_spec)
    except ValidationError as exc:
        raise Refused(explain(exc), 422) from None
    if not isinstance(spec, TenantSpec):  # KafkaCluster: the model is the whole check
        assert isinstance(spec, KafkaClusterSpec)
        return []
    ref: KafkaClusterRef | None = spec.cluster_ref
    inline: ClusterRef | None = spec.cluster
    try:
        access = await cluster.access(rt, namespace, ref, inline)
    except ClusterNotFound as exc:
        return [f"{exc}: the {info.kind} is stored and waits for it (Ready=False, reason ClusterNotFound)"]
    except (Forbidden, ClusterUnreachable) as exc:
        raise Refused(str(exc), 403) from None
    except ValidationError as exc:  # the KafkaCluster itself is invalid: its admin's to fix
        raise Refused(f"KafkaCluster {ref.name if ref else ''} is invalid: {explain(exc, '')}", 403) from None
    except kube.KubeApiError as exc:
        raise Refused(f"the grant cannot be read now ({exc}); try again", 503) from None
    try:
        await asyncio.to_thread(_check(spec), access)
    except Forbidden as exc:
        raise Refused(str(exc), 403) from None
    return []


def _validator(info: CrdInfo) -> Callable[..., Any]:
    async def validate(
        body: kopf.Body,
        old: kopf.BodyEssence | None,
        operation: str | None,
        warnings: list[str],
        memo: kopf.Memo,
        **_: Any,
    ) -> None:
        spec = dict(body.get("spec") or {})
        if operation == "UPDATE" and old is not None and dict(old.get("spec") or {}) == spec:
            return  # metadata or finalizers only (matchConditions already skip these)
        try:
            warnings.extend(await review(runtime(memo), info, body.metadata.namespace or "", spec))
        except Refused as exc:
            raise kopf.AdmissionError(str(exc), code=exc.code) from None

    validate.__name__ = validate.__qualname__ = configuration.handler_id(info).replace("-", "_")
    return validate


def register() -> None:
    """One validating handler per kind, at the path ValidatingWebhookConfiguration ebb.dev names."""
    for info in ALL_CRDS:
        kopf.on.validate(
            GROUP,
            VERSION,
            info.plural,
            id=configuration.handler_id(info),
            operations=["CREATE", "UPDATE"],
            side_effects=False,
            ignore_failures=info not in TENANT_CRDS,
        )(_validator(info))
