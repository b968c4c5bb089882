"""The per-group series of held partitions: one per group that holds some, gone when it holds none."""

from __future__ import annotations

from prometheus_client import REGISTRY

from ebb_operator import metrics

NAME = "ebb_operator_policy_held_partitions_by_group"


def _value(group: str) -> float | None:
    return REGISTRY.get_sample_value(NAME, {"namespace": "ns", "policy": "p", "group": group})


def test_a_group_that_holds_nothing_any_more_loses_its_series() -> None:
    metrics.set_held_by_group("ns", "p", {"billing": 3, "audit": 1})
    assert (_value("billing"), _value("audit")) == (3.0, 1.0)
    metrics.set_held_by_group("ns", "p", {"billing": 2})
    assert (_value("billing"), _value("audit")) == (2.0, None)
    metrics.set_held_by_group("ns", "p", {})
    assert _value("billing") is None
