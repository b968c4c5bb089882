"""RetentionPolicy reconciliation: KIP-68 consumed retention on a schedule.

The kopf entry points only; the run loop is `handlers/retention/runner.py`, the engines, forced
retention and history are beside it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import kopf

from ebb_operator import metrics
from ebb_operator.handlers import lifetime
from ebb_operator.handlers.retention.runner import PolicyRunner
from ebb_operator.handlers.runtime import runtime
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.models.retention_policy import CRD, RunOutcome


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
    """The policy's run loop: one daemon per policy is what makes its runs one at a time. It ends (kopf
    cancels it) when the policy is deleted, or when this operator stops serving it."""
    try:
        await PolicyRunner(runtime(memo), body).loop(stopped)
    finally:
        forget(body.metadata.namespace, body.metadata.name or "")


def forget(namespace: str | None, name: str) -> None:
    """Drop the policy's metric series (its owned objects go with it through ownerReferences)."""
    for gauge in (metrics.POLICY_RECLAIMABLE_BYTES, metrics.POLICY_HELD_PARTITIONS):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, name)
    for outcome in RunOutcome:
        with contextlib.suppress(KeyError):
            metrics.POLICY_RUNS.remove(namespace, name, outcome.value)
    metrics.set_held_by_group(namespace or "", name, {})
