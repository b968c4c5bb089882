"""A policy's objects over time: its unfinished DeleteRecords (one outstanding delete, KIP-762), the
pruning of finished DeleteRecords and SparkApplications beyond `historyLimit`, and the cleanup of the runs
of policies that are gone (no garbage collector is assumed: the test control plane has none, and users
expect the limit anyway).

A policy's DeleteRecords live beside it and are selected by its name; its runs' objects live in the jobs
namespace, where owner references cannot reach the policy, and are selected by its uid (engines.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ebb_operator import kube
from ebb_operator.handlers.retention.engines import SPARK_TERMINAL, run_selector
from ebb_operator.models.delete_records import CRD as DR_CRD
from ebb_operator.models.delete_records import TERMINAL_PHASES, DeleteRecordsStatus
from ebb_operator.models.retention_policy import CRD as RP_CRD

DELETE_RECORDS = kube.Resource.ebb(DR_CRD.plural, DR_CRD.kind)
RETENTION_POLICIES = kube.Resource.ebb(RP_CRD.plural, RP_CRD.kind)
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


def _prune(resource: kube.Resource, namespace: str, items: list[dict[str, Any]], keep: int) -> None:
    finished = _dr_finished if resource is DELETE_RECORDS else _spark_finished
    for name in prune_candidates(items, keep, finished):
        with contextlib.suppress(kube.KubeApiError):
            kube.delete_object(kube.ObjectRef(resource, namespace, name))
            log.info("pruned %s %s/%s (historyLimit %d)", resource.plural, namespace, name, keep)


def prune(namespace: str, policy: str, uid: str, keep: int, jobs_namespace: str | None) -> None:
    """After a run (none of the policy's is in progress): historyLimit over its DeleteRecords and, for a
    policy whose runs are SparkApplications (`jobs_namespace`), over those, and any request Secret or
    ConfigMap a crash left behind in the jobs namespace."""
    _prune(DELETE_RECORDS, namespace, policy_objects(DELETE_RECORDS, namespace, policy), keep)
    if jobs_namespace is None:
        return
    selector = run_selector(uid)
    with contextlib.suppress(kube.NotFoundError):  # no Spark operator CRD installed: nothing to prune
        apps = kube.list_objects(kube.SPARK_APPLICATIONS, jobs_namespace, selector)
        _prune(kube.SPARK_APPLICATIONS, jobs_namespace, apps, keep)
    kube.delete_labelled(jobs_namespace, selector)


def forget_runs(jobs_namespace: str, uid: str) -> None:
    """Delete every object of the runs of policy `uid` (deleted): SparkApplications (their pods go with
    them), request Secrets, ConfigMaps. An operator without rights in the jobs namespace (the chart's
    spark.enabled off) never made any: nothing to do."""
    selector = run_selector(uid)
    with contextlib.suppress(kube.ForbiddenError):
        with contextlib.suppress(kube.NotFoundError):  # no Spark operator CRD installed
            kube.delete_objects(kube.SPARK_APPLICATIONS, jobs_namespace, selector)
        kube.delete_labelled(jobs_namespace, selector)


def orphans(owners: dict[str, str], live: Callable[[str], set[str] | None]) -> list[str]:
    """The policy uids among `owners` (uid -> the policy's namespace) whose policy is gone: not among
    `live(namespace)`, the uids of that namespace's policies (None: unknown, so nothing is judged)."""
    known: dict[str, set[str] | None] = {}
    gone = []
    for uid, namespace in sorted(owners.items()):
        if namespace not in known:
            known[namespace] = live(namespace)
        uids = known[namespace]
        if uids is not None and uid not in uids:
            gone.append(uid)
    return gone


def _live_uids(namespace: str) -> set[str] | None:
    try:
        return {str(o["metadata"]["uid"]) for o in kube.list_objects(RETENTION_POLICIES, namespace)}
    except kube.KubeApiError:
        return None  # a namespace the operator does not serve: its runs are not ours to judge


def sweep(jobs_namespace: str) -> list[str]:
    """Delete the runs whose policy no longer exists (deleted while the operator was away, or a deletion
    it missed); the uids of the policies whose runs went (blocking: a worker thread)."""
    selector = kube.POLICY_UID_LABEL
    try:
        labelled: list[dict[str, str]] = kube.config_map_labels(jobs_namespace, selector)
    except kube.ForbiddenError:
        return []  # no rights in the jobs namespace (spark.enabled off): no runs were ever made there
    with contextlib.suppress(kube.NotFoundError):
        apps = kube.list_objects(kube.SPARK_APPLICATIONS, jobs_namespace, selector)
        labelled += [dict(a["metadata"].get("labels") or {}) for a in apps]
    owners = {
        labels[kube.POLICY_UID_LABEL]: labels.get(kube.POLICY_NAMESPACE_LABEL, "")
        for labels in labelled
        if labels.get(kube.POLICY_UID_LABEL)
    }
    gone = orphans(owners, _live_uids)
    for uid in gone:
        forget_runs(jobs_namespace, uid)
        log.info("deleted the runs of RetentionPolicy %s/uid %s, which no longer exists", owners[uid], uid)
    return gone
