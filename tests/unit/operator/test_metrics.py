"""The operator's metrics that carry logic: per-group held partitions (one series per group that holds
some, gone when it holds none), reconcile counts and durations, the build info."""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from prometheus_client import REGISTRY

from ebb_operator import metrics

NAME = "ebb_operator_policy_held_partitions_by_group"
T = TypeVar("T")


def _value(group: str) -> float | None:
    return REGISTRY.get_sample_value(NAME, {"namespace": "ns", "policy": "p", "group": group})


def test_a_group_that_holds_nothing_any_more_loses_its_series() -> None:
    metrics.set_held_by_group("ns", "p", {"billing": 3, "audit": 1})
    assert (_value("billing"), _value("audit")) == (3.0, 1.0)
    metrics.set_held_by_group("ns", "p", {"billing": 2})
    assert (_value("billing"), _value("audit")) == (2.0, None)
    metrics.set_held_by_group("ns", "p", {})
    assert _value("billing") is None


def _run(call: Awaitable[T]) -> T:
    """`asyncio.run` of what `reconciles` returns, typed as an awaitable rather than a coroutine."""

    async def main() -> T:
        return await call

    return asyncio.run(main())


def test_a_reconcile_is_counted_and_timed_however_it_ends() -> None:
    @metrics.reconciles("UnitKind")
    async def fails() -> None:
        raise RuntimeError("boom")

    @metrics.reconciles("UnitKind")
    async def works() -> int:
        return 7

    assert _run(works()) == 7
    with pytest.raises(RuntimeError, match="boom"):
        _run(fails())
    labels = {"kind": "UnitKind"}
    assert REGISTRY.get_sample_value("ebb_operator_reconciles_total", labels) == 2
    assert REGISTRY.get_sample_value("ebb_operator_reconcile_duration_seconds_count", labels) == 2


def test_build_info_names_the_version_the_commit_and_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EBB_COMMIT", "0123abcd")
    metrics.record_build()
    version = importlib.metadata.version("ebb")
    labels = {"version": version, "commit": "0123abcd", "python": platform.python_version()}
    assert REGISTRY.get_sample_value("ebb_operator_build_info", labels) == 1
