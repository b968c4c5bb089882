"""Shared test configuration: each tier's marker comes from its directory, so a test cannot forget it."""

from __future__ import annotations

from pathlib import Path

import pytest

# Harness fixtures any tier may use (session-scoped, started on first use).
pytest_plugins = ("tests.harness.kafka_fixtures",)

TESTS = Path(__file__).parent
TIERS = ("unit", "compat", "spark", "k8s", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        rel = Path(str(item.fspath)).relative_to(TESTS)
        tier = rel.parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
