"""A policy's objects over time: its unfinished DeleteRecords (one outstanding delete, KIP-762) and the
pruning of finished DeleteRecords and SparkApplications beyond `historyLimit` (no garbage collector is
assumed: the test control plane has none, and users expect the limit anyway)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ebb_operator import kube
from ebb_operator.handlers.retention.engines import SPARK_TERMINAL
from ebb_operator.models.delete_records import CRD as DR_CRD
from ebb_operator.models.delete_records import TERMINAL_PHASES, DeleteRecordsStatus

DELETE_RECORDS = kube.Resource.ebb(DR_CRD.plural, DR_CRD.kind)
log = logging.getLogger(__name__)


def _dr_finished(obj: dict[str, Any]) -> bool:
    return DeleteRecordsStatus.model_validate(dict(obj.get("status") or {})).phase in TERMINAL_PHASES


def _spark_finished(obj: dict[str, Any]) -> bool:
    return (obj.get("status") or {}).get("applicationState", {}).get("state") in SPARK_TERMINAL


def policy_objects(resource: kube.Resource, namespace: str, policy: str) -> list[dict[str, Any]]:
    """This policy's objects of one kind, oldest first (selected by the label the operator sets)."""
    return kube.list_objects(resource, namespace, f"{kube.POLICY_LABEL}={policy[:63]}")


def outstanding_delete(namespace: str, policy: str) -> str | None:
    """The policy's DeleteRecords that has not finished, if any (blocking: a worker thread)."""
    for obj in policy_objects(DELETE_RECORDS, namespace, policy):
        if not _dr_finished(obj):
            return str(obj["metadata"]["name"])
    return None


def prune_candidates(
    items: list[dict[str, Any]], keep: int, finished: Callable[[dict[str, Any]], bool]
) -> list[str]:
    """Names of finished objects beyond the newest `keep` (items oldest first); unfinished ones stay."""
    done = [o for o in items if finished(o)]
    excess = len(done) - keep
    return [o["metadata"]["name"] for o in done[: max(0, excess)]]


def prune(namespace: str, policy: str, keep: int) -> None:
    """historyLimit: delete the oldest finished DeleteRecords and SparkApplications of the policy."""
    kinds = ((DELETE_RECORDS, _dr_finished), (kube.SPARK_APPLICATIONS, _spark_finished))
    for resource, finished in kinds:
        try:
            items = policy_objects(resource, namespace, policy)
        except kube.NotFoundError:
            continue  # no Spark operator CRD installed: nothing of that kind to prune
        for name in prune_candidates(items, keep, finished):
            with contextlib.suppress(kube.KubeApiError):
                kube.delete_object(kube.ObjectRef(resource, namespace, name))
                log.info("pruned %s %s/%s (historyLimit %d)", resource.plural, namespace, name, keep)
