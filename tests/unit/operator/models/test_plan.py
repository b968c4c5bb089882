"""The plan summary shared by the analysis job and the operator."""

from __future__ import annotations

from ebb_operator.models.plan import PlanSummary


def test_plan_summary_round_trips_in_camel_case() -> None:
    summary = PlanSummary(
        topics=2, partitions=6, deletable_records=100, reclaimable_bytes=4096, held_partitions=1
    )
    assert PlanSummary.model_validate(summary.to_k8s()) == summary
    assert summary.to_k8s()["reclaimableBytes"] == 4096
