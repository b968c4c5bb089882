"""Fixtures for the log engine tests: a settable clock, fresh logs and log managers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ebb_broker.config import BrokerConfig, LogConfig
from ebb_broker.log.log import Log
from ebb_broker.log.log_manager import LogManager
from tests.unit.broker.log.log_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_log(tmp_path: Path, clock: Clock) -> Iterator[Callable[..., Log]]:
    """``make_log(**topic_config)`` opens a fresh log in tmp_path; closed at teardown."""
    opened: list[Log] = []

    def make(directory: Path | None = None, **overrides: object) -> Log:
        props = {k.replace("_", "."): v for k, v in overrides.items()}
        config = LogConfig.parse(props)
        lg = Log.open(directory or tmp_path / "t-0", "t", 0, config, clock=clock)
        opened.append(lg)
        return lg

    yield make
    for lg in opened:
        try:
            lg.close()
        except OSError:
            pass


@pytest.fixture
def manager(tmp_path: Path, clock: Clock) -> Iterator[Callable[..., LogManager]]:
    """``manager(**broker_config)`` opens a LogManager on tmp_path/data; closed at teardown."""
    opened: list[LogManager] = []

    def make(**props: object) -> LogManager:
        cfg = BrokerConfig.parse({k.replace("_", "."): v for k, v in props.items()})
        mgr = LogManager.open(tmp_path / "data", cfg.log_manager_config(), clock=clock)
        opened.append(mgr)
        return mgr

    yield make
    for mgr in opened:
        mgr.close()
