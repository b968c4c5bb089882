"""Shared test configuration: each tier's marker comes from its directory, so a test cannot forget it.

At the end of a run the time spent in each tier is printed (setup, call and teardown of its tests, so
the start of a shared broker or control plane counts in the tier of the first test that needed it).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

# Fixtures of the test harnesses (harness/), usable from every tier; each starts what it needs
# only when a test asks for it (session-scoped).
pytest_plugins = ("tests.plugins.kafka", "tests.plugins.controlplane")

TESTS = Path(__file__).parent
TIERS = ("unit", "compat", "spark", "k8s", "e2e", "cluster")

_tier_seconds: dict[str, float] = defaultdict(float)
_tier_tests: dict[str, set[str]] = defaultdict(set)


def tier_of(path: Path) -> str | None:
    """The tier of a test file: the first directory under tests/ when it names one."""
    rel = path.resolve().relative_to(TESTS.resolve())
    return rel.parts[0] if rel.parts and rel.parts[0] in TIERS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(Path(str(item.fspath)))
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
    # The cluster tier (a node, images, pods) runs after every other tier, whatever the directory order.
    items.sort(key=lambda item: tier_of(Path(str(item.fspath))) == "cluster")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tier = tier_of(Path(report.fspath)) if report.fspath else None
    if tier is not None:
        _tier_seconds[tier] += report.duration
        _tier_tests[tier].add(report.nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _tier_seconds:
        return
    terminalreporter.section("time per tier")
    for tier in TIERS:
        if tier in _tier_seconds:
            minutes, seconds = divmod(_tier_seconds[tier], 60)
            count = len(_tier_tests[tier])
            terminalreporter.write_line(f"{tier:8} {count:4} tests  {int(minutes):3d} min {seconds:4.1f} s")
