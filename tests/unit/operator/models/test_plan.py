"""The plan summary shared by the analysis job and the operator."""

from __future__ import annotations

import pytest

from ebb_operator.models.plan import PlanSummary


def test_plan_summary_round_trips_in_camel_case() -> None:
    summary = PlanSummary(
        topics=2, partitions=6, deletable_records=100, reclaimable_bytes=4096, held_partitions=1
    )
    assert PlanSummary.model_validate(summary.to_k8s()) == summary
    assert summary.to_k8s()["reclaimableBytes"] == 4096


@pytest.mark.parametrize(
    ("count", "shown"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (5 * 1024**3, "5.0 GiB"), (3 * 1024**6, "3072.0 PiB")],
)
def test_reclaimable_bytes_are_shown_for_humans(count: int, shown: str) -> None:
    """The Reclaimable column of `kubectl get rp` reads this field."""
    assert PlanSummary(reclaimable_bytes=count).reclaimable == shown
    parsed = PlanSummary.model_validate({"reclaimableBytes": count, "reclaimable": "stale"})
    assert parsed.reclaimable == shown
