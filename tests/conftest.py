"""Shared test configuration: each tier's marker comes from its directory, so a test cannot forget it."""

from __future__ import annotations

from pathlib import Path

import pytest

# Fixtures of the test harnesses (harness/), usable from every tier; each starts what it needs
# only when a test asks for it (session-scoped).
pytest_plugins = ("tests.plugins.kafka", "tests.plugins.controlplane")

TESTS = Path(__file__).parent
TIERS = ("unit", "compat", "spark", "k8s", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        rel = Path(str(item.fspath)).relative_to(TESTS)
        tier = rel.parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
