"""Mapping a RetentionPolicy object to the analysis job's inputs, and refusing bad ones clearly."""

from __future__ import annotations

from typing import Any

import pytest

from ebb_operator.analysis.policy import AnalysisPolicy, PolicyError
from ebb_operator.models.run import RunRequest


def obj(**spec: Any) -> dict[str, Any]:
    base = {"topics": {"include": ["orders.*"]}, "consumedRetention": "1h30m"}
    meta = {"name": "rp", "namespace": "ns", "uid": "u-1"}
    return {"kind": "RetentionPolicy", "metadata": meta, "spec": {**base, **spec}}


def test_maps_every_field_the_plan_uses() -> None:
    p = AnalysisPolicy.from_resource(
        obj(
            topics={"include": ["orders.*"], "exclude": [".*-tmp"]},
            consumers={
                "include": ["app-.*"],
                "exclude": ["app-test"],
                "required": ["audit"],
                "exclusive": True,
                "inactiveAfter": "7d",
            },
            dryRun=True,
            analysis={"offsetsSource": "ConsumerOffsetsTopic"},
        )
    )
    assert (p.namespace, p.name, p.uid) == ("ns", "rp", "u-1")
    assert p.consumed_retention_ms == 90 * 60_000
    assert (p.topics_include, p.topics_exclude) == (("orders.*",), (".*-tmp",))
    assert (p.groups_include, p.groups_exclude, p.required) == (("app-.*",), ("app-test",), ("audit",))
    assert (p.exclusive, p.inactive_after_ms, p.dry_run) == (True, 7 * 86_400_000, True)
    assert p.offsets_source.value == "ConsumerOffsetsTopic" and p.discountable_groups is None


def test_a_request_carries_the_groups_the_grant_lets_the_policy_leave_out() -> None:
    request = RunRequest.model_validate(
        {
            "policy": {"namespace": "ns", "name": "rp", "uid": "u-1"},
            "spec": {"topics": {"include": ["orders"]}, "consumedRetention": "1h"},
            "runId": "r1",
            "bootstrapServers": "kafka:9092",
            "discountableGroups": ["team-a-.*"],
        }
    )
    p = AnalysisPolicy.from_request(request)
    assert (p.namespace, p.name, p.uid, p.discountable_groups) == ("ns", "rp", "u-1", ("team-a-.*",))
    assert p.offsets_source.value == "AdminAPI"


def test_defaults_count_every_group() -> None:
    p = AnalysisPolicy.from_resource(obj())
    assert (p.groups_include, p.required, p.exclusive, p.inactive_after_ms) == ((".*",), (), False, None)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"consumedRetention": "soon"}, "consumedRetention"),
        ({"topics": {"include": []}}, "include"),
        ({"topics": {"include": ["orders("]}}, "include"),
        ({"consumers": {"inactiveAfter": "1 week"}}, "inactiveAfter"),
        ({"retention": "1h"}, "retention"),  # misspelt key: rejected, never silently ignored
    ],
)
def test_bad_policies_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError, match=field):
        AnalysisPolicy.from_resource(obj(**spec))
