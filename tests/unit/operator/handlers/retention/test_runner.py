"""The run loop's pure decisions: when the next run is due (with backoff after failures) and the
DeleteRecords a run creates from its plan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import kopf

from ebb_operator.handlers.retention.runner import delete_records_object, due_in
from ebb_operator.models.delete_records import DeleteRecordsSpec, Guard, PartitionOffset
from ebb_operator.models.plan import PlanSummary
from ebb_operator.models.retention_policy import (
    Engine,
    LastRun,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    RunOutcome,
)
from ebb_operator.models.run import RunPlan

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _spec(**extra: Any) -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {"topics": {"include": ["t"]}, "consumedRetention": "1h", "schedule": {"interval": "10m"}, **extra}
    )


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(
    started: datetime, outcome: RunOutcome, failures: int = 0, completed: datetime | None = None
) -> RetentionPolicyStatus:
    run = LastRun(
        id="r",
        started_at=_ts(started),
        completed_at=_ts(completed) if completed else None,
        engine=Engine.LOCAL,
        outcome=outcome,
    )
    return RetentionPolicyStatus(last_run=run, failures=failures)


def test_a_run_is_due_one_interval_after_the_last_started() -> None:
    now = NOW.timestamp()
    assert due_in(RetentionPolicyStatus(), _spec(), now) == 0
    assert due_in(_status(NOW - timedelta(minutes=1), RunOutcome.SUCCEEDED), _spec(), now) == 540
    # A run left Running by an operator restart is resumed (or redone) at once.
    assert due_in(_status(NOW, RunOutcome.RUNNING), _spec(), now) == 0


def test_failed_runs_back_off_exponentially_up_to_the_interval() -> None:
    started, now = NOW - timedelta(minutes=1), NOW.timestamp()

    def wait(failures: int) -> float:
        return due_in(_status(started, RunOutcome.FAILED, failures, completed=NOW), _spec(), now, backoff=10)

    assert [wait(n) for n in (1, 2, 3)] == [10, 20, 40]
    assert wait(20) == 600  # never longer than schedule.interval


def _policy() -> kopf.Body:
    return kopf.Body({"metadata": {"name": "orders", "namespace": "ns", "uid": "u-1"}, "spec": {}})


def test_the_runs_delete_records_is_guarded_by_the_groups_the_plan_counted() -> None:
    plan = RunPlan(
        policy="ns/orders",
        run_id="r1",
        now_ms=0,
        summary=PlanSummary(),
        deletes=[PartitionOffset(topic="o", partition=0, offset=6)],
        counted_groups=["billing", "audit"],
    )
    owner = {"apiVersion": "ebb.dev/v1alpha1", "kind": "RetentionPolicy", "name": "orders", "uid": "u-1"}
    body = delete_records_object(_policy(), _spec(clusterRef={"name": "shared"}), plan, owner, {"k": "v"})
    assert (body["metadata"]["name"], body["metadata"]["namespace"]) == ("orders-r1", "ns")
    assert body["metadata"]["ownerReferences"] == [owner] and body["metadata"]["labels"] == {"k": "v"}
    spec = DeleteRecordsSpec.model_validate(body["spec"])
    assert [(p.topic, p.partition, p.offset) for p in spec.partitions] == [("o", 0, 6)]
    assert (spec.guard, spec.consumed_by, spec.dry_run) == (Guard.CONSUMED_BY, ["billing", "audit"], False)
    assert spec.cluster_ref is not None and spec.cluster_ref.name == "shared"
