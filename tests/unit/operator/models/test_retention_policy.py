"""The RetentionPolicy model: defaults and required fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ebb_operator.models.retention_policy import Engine, RetentionPolicySpec


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
