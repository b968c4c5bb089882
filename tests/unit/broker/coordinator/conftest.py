"""The coordinator's unit tests share one context per test: a coordinator over a real log engine in a
temporary directory, on a manual clock (coordinator_context.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.broker.coordinator.coordinator_context import CoordinatorContext


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[CoordinatorContext]:
    c = CoordinatorContext(tmp_path / "data")
    yield c
    c.close()
