"""RetentionPolicy reconciliation: KIP-68 consumed retention on a schedule.

The kopf entry points only; the run loop is `handlers/retention/runner.py`, the engines, forced
retention and history are beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import kopf

from ebb_operator import kube, metrics
from ebb_operator.handlers import lifetime
from ebb_operator.handlers.retention.budget import lift_quotas
from ebb_operator.handlers.retention.history import forget_runs, sweep
from ebb_operator.handlers.retention.runner import PolicyRunner
from ebb_operator.handlers.runtime import Runtime, runtime
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.models.retention_policy import (
    CRD,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    RunOutcome,
)

log = logging.getLogger(__name__)


@kopf.daemon(
    GROUP,
    VERSION,
    CRD.plural,
    id="retentionpolicy-runner",
    cancellation_timeout=30,
    when=lifetime.alive(CRD),
)
async def retentionpolicy_runner(
    body: kopf.Body, stopped: kopf.DaemonStopped, memo: kopf.Memo, **_: Any
) -> None:
    """The policy's run loop: one daemon per policy is what makes its runs one at a time. A run the
    operator's restart interrupts is resumed by the next operator; one the policy's deletion interrupts
    goes: kopf stops the daemon once the policy has left the API server (handlers/lifetime.py), and
    whichever ends last of this daemon and the deletion handler below deletes what the run made."""
    rt = runtime(memo)
    runner = PolicyRunner(rt, body)
    try:
        await runner.loop(stopped)
    finally:
        if stopped.reason is not None and stopped.reason & _GONE:
            await asyncio.to_thread(
                forget, body.metadata.namespace, body.metadata.name or "", str(body.metadata.uid), rt
            )
            # The client quotas the policy's budget set (ThrottleProducers) go with it: they live in the
            # cluster, outside the API server, and the runner's status is the freshest record of them.
            await _lift_quietly(rt, body, runner.status)


# Without a finalizer, a deleted policy's daemon is stopped because it no longer matches its `when=`
# (lifetime.alive) rather than by a deletionTimestamp.
_GONE = kopf.DaemonStoppingReason.RESOURCE_DELETED | kopf.DaemonStoppingReason.FILTERS_MISMATCH


@kopf.on.delete(GROUP, VERSION, CRD.plural, id="retentionpolicy-forget", optional=True)
def retentionpolicy_forget(namespace: str | None, name: str, uid: str, memo: kopf.Memo, **_: Any) -> None:
    """When kopf sees the deletion (the policy had another finalizer): the same as the daemon's end."""
    forget(namespace, name, uid, runtime(memo))


def forget(namespace: str | None, name: str, uid: str, rt: Runtime) -> None:
    """Drop the policy's metric series and its runs in the jobs namespace (its DeleteRecords go with it
    through ownerReferences; its runs cannot have it as owner). Best effort: what a missed deletion leaves
    behind, the sweep below deletes."""
    for gauge in (metrics.POLICY_RECLAIMABLE_BYTES, metrics.POLICY_HELD_PARTITIONS):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, name)
    for outcome in RunOutcome:
        with contextlib.suppress(KeyError):
            metrics.POLICY_RUNS.remove(namespace, name, outcome.value)
    metrics.set_held_by_group(namespace or "", name, {})
    try:
        forget_runs(rt.settings.job_namespace, uid)
    except kube.KubeApiError as exc:
        log.warning("%s/%s deleted: its runs stay until the next sweep: %s", namespace, name, exc)


async def _lift_quietly(rt: Runtime, body: kopf.Body, status: RetentionPolicyStatus) -> None:
    try:
        spec = RetentionPolicySpec.model_validate(dict(body.spec))
        await lift_quotas(rt, body.metadata.namespace or "", body.metadata.name or "", spec, status)
    except Exception as exc:  # no finalizer holds the policy for a retry (handlers/lifetime.py): say so
        log.warning(
            "%s/%s deleted: client quotas not lifted, remove them by hand: %s",
            body.metadata.namespace,
            body.metadata.name,
            exc,
        )


async def sweep_runs(rt: Runtime) -> None:
    """At start and every resync interval: delete the runs of policies that no longer exist."""
    while True:
        try:
            await asyncio.to_thread(sweep, rt.settings.job_namespace)
        except kube.KubeApiError as exc:
            log.warning("cannot sweep the runs of deleted RetentionPolicies: %s", exc)
        await asyncio.sleep(rt.settings.resync_seconds)


@kopf.on.startup(id="retentionpolicy-sweep")
async def retentionpolicy_sweep(memo: kopf.Memo, **_: Any) -> None:
    memo["sweeper"] = asyncio.create_task(sweep_runs(runtime(memo)), name="retentionpolicy-sweep")


@kopf.on.cleanup(id="retentionpolicy-sweep-stop")
async def retentionpolicy_sweep_stop(memo: kopf.Memo, **_: Any) -> None:
    task = memo.get("sweeper")
    if isinstance(task, asyncio.Task):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
