"""The RetentionPolicy model: defaults, required fields, and budgets that cannot work."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ebb_operator.analysis.policy import AnalysisPolicy, BudgetRule
from ebb_operator.models.retention_policy import BudgetAction, Engine, RetentionPolicySpec


def test_retention_policy_defaults() -> None:
    spec = RetentionPolicySpec.model_validate({"topics": {"include": ["events"]}, "consumedRetention": "1h"})
    assert spec.consumers.include == [".*"] and not spec.consumers.exclusive
    assert spec.schedule.interval == "1h"
    assert spec.analysis.engine is Engine.LOCAL
    assert spec.history_limit == 3


def test_retention_policy_requires_consumed_retention() -> None:
    with pytest.raises(ValidationError, match="consumedRetention"):
        RetentionPolicySpec.model_validate({"topics": {"include": ["events"]}})


@pytest.mark.parametrize("interval", ["0s", "59s"])
def test_an_interval_below_the_minimum_is_refused_naming_the_rule(interval: str) -> None:
    with pytest.raises(ValidationError, match="shorter than the minimum 1m"):
        RetentionPolicySpec.model_validate(
            {"topics": {"include": ["t"]}, "consumedRetention": "1h", "schedule": {"interval": interval}}
        )
    spec = RetentionPolicySpec.model_validate(
        {"topics": {"include": ["t"]}, "consumedRetention": "1h", "schedule": {"interval": "1m"}}
    )
    assert spec.schedule.interval == "1m"


def _budget(budget: dict[str, object], consumed: str = "1h") -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {"topics": {"include": ["t"]}, "consumedRetention": consumed, "budget": budget}
    )


def test_a_budget_parses_quantities_and_durations_and_alerts_by_default() -> None:
    budget = _budget({"maxBytesPerPartition": "20Gi", "maxAge": "3d"}).budget
    assert budget is not None and budget.action is BudgetAction.ALERT
    policy = AnalysisPolicy.from_spec(
        "ns", "rp", None, _budget({"maxBytesPerPartition": "20Gi", "maxAge": "3d"})
    )
    assert policy.budget == BudgetRule(max_bytes=20 * 2**30, max_age_ms=3 * 86_400_000)


@pytest.mark.parametrize(
    ("budget", "consumed", "message"),
    [
        ({"action": "Alert"}, "1h", "a budget sets maxBytesPerPartition, maxAge or both"),
        ({"maxAge": "30m"}, "1h", "budget.maxAge must not be shorter than consumedRetention"),
        ({"maxBytesPerPartition": "20GB"}, "1h", "String should match pattern"),
        ({"maxBytesPerPartition": "0"}, "1h", "String should match pattern"),
        ({"maxAge": "3d", "action": "ThrottleProducers"}, "1h", "throttle is set exactly when action is"),
        (
            {"maxAge": "3d", "throttle": {"producers": [{"clientId": "w"}], "producerByteRate": "1Mi"}},
            "1h",
            "throttle is set exactly when action is ThrottleProducers",
        ),
        (
            {
                "maxAge": "3d",
                "action": "ThrottleProducers",
                "throttle": {"producers": [{}], "producerByteRate": "1Mi"},
            },
            "1h",
            "a producer names a user, a clientId or both",
        ),
        (
            {
                "maxAge": "3d",
                "action": "ThrottleProducers",
                "throttle": {"producers": [], "producerByteRate": "1Mi"},
            },
            "1h",
            "at least 1 item",
        ),
    ],
    ids=[
        "empty",
        "age-below-consumed",
        "unit",
        "zero",
        "throttle-missing",
        "throttle-stray",
        "nobody",
        "none",
    ],
)
def test_a_budget_that_cannot_work_is_refused_naming_the_rule(
    budget: dict[str, object], consumed: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _budget(budget, consumed)
