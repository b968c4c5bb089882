"""The RetentionPolicy handler's pure parts: the SparkApplication it creates, historyLimit, the schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ebb_operator.handlers.retention_policy import RunFailed, _due_in, prune_candidates, spark_application
from ebb_operator.models.retention_policy import (
    Engine,
    LastRun,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    RunOutcome,
)

OWNER = {"apiVersion": "ebb.dev/v1alpha1", "kind": "RetentionPolicy", "name": "p", "uid": "u"}


def _spec(**extra: Any) -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {"topics": {"include": ["t"]}, "consumedRetention": "1h", "schedule": {"interval": "10m"}, **extra}
    )


def test_spark_application_takes_image_account_and_resources_from_the_policy() -> None:
    spec = _spec(
        analysis={
            "engine": "SparkApplication",
            "sparkApplication": {
                "image": "registry/ebb-operator:1",
                "serviceAccount": "spark",
                "executor": {"cores": 2, "memory": "4g", "instances": 3},
            },
        }
    )
    app = spark_application("p", "ns", OWNER, "20260101-000000", spec)
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert app["metadata"]["name"] == "p-20260101-000000"
    assert app["metadata"]["ownerReferences"] == [OWNER]
    s = app["spec"]
    assert (s["type"], s["image"], s["restartPolicy"]) == (
        "Python",
        "registry/ebb-operator:1",
        {"type": "Never"},
    )
    assert s["mainApplicationFile"].startswith("local:///")
    assert s["mainApplicationFile"].endswith("ebb_operator/analysis/__main__.py")
    assert s["arguments"] == [
        "--policy", "ns/p", "--run-id", "20260101-000000", "--report-configmap", "p-20260101-000000"
    ]  # fmt: skip
    assert s["driver"] == {"cores": 1, "memory": "1g", "serviceAccount": "spark"}
    assert s["executor"] == {"cores": 2, "memory": "4g", "instances": 3, "serviceAccount": "spark"}


def test_spark_application_without_an_image_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EBB_OPERATOR_IMAGE", raising=False)
    with pytest.raises(RunFailed, match="image") as err:
        spark_application("p", "ns", OWNER, "r", _spec(analysis={"engine": "SparkApplication"}))
    assert err.value.reason == "InvalidSpec"
    monkeypatch.setenv("EBB_OPERATOR_IMAGE", "ebb-operator:2")
    assert spark_application("p", "ns", OWNER, "r", _spec())["spec"]["image"] == "ebb-operator:2"


def _obj(name: str, done: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "done": done}


def test_history_limit_prunes_only_the_oldest_finished_objects() -> None:
    items = [_obj("a", True), _obj("b", False), _obj("c", True), _obj("d", True)]
    assert prune_candidates(items, 2, lambda o: bool(o["done"])) == ["a"]
    assert prune_candidates(items, 0, lambda o: bool(o["done"])) == ["a", "c", "d"]
    assert prune_candidates(items, 5, lambda o: bool(o["done"])) == []


def _status(started: datetime, outcome: RunOutcome) -> RetentionPolicyStatus:
    run = LastRun(
        id="r", started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"), engine=Engine.LOCAL, outcome=outcome
    )
    return RetentionPolicyStatus(last_run=run)


def test_a_run_is_due_one_interval_after_the_last_started() -> None:
    now = datetime.now(UTC)
    assert _due_in(RetentionPolicyStatus(), _spec()) == 0
    assert 500 < _due_in(_status(now - timedelta(minutes=1), RunOutcome.SUCCEEDED), _spec()) <= 540
    assert _due_in(_status(now - timedelta(minutes=11), RunOutcome.FAILED), _spec()) == 0
    # A run left Running by an operator restart is resumed (or redone) at once.
    assert _due_in(_status(now, RunOutcome.RUNNING), _spec()) == 0
