"""Fixtures of the compat tier: a real ebb-broker process and the three real clients.

The process launcher lives in harness/ebb_broker.py so other tiers reuse it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from tests.compat.clients import CLIENTS, Client

# Small __consumer_offsets keeps each broker start quick; the layout is the same as with 50.
FAST_BROKER = {"offsets.topic.num.partitions": "4"}


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    """One broker shared by the scenarios that do not restart it."""
    root = tmp_path_factory.mktemp("ebb-shared")
    b = EbbBroker(root / "data", configs=FAST_BROKER)
    b.start()
    yield b
    assert b.stop() == 0, "ebb-broker did not shut down cleanly on SIGTERM"


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., EbbBroker]]:
    """Brokers of their own (restarts, kill -9, special configs); all stopped at teardown."""
    started: list[EbbBroker] = []

    def make(configs: dict[str, str] | None = None, name: str = "data") -> EbbBroker:
        b = EbbBroker(
            tmp_path / name,
            configs={**FAST_BROKER, **(configs or {})},
            metrics_port=free_port(),
            log_dir=tmp_path,
        )
        b.start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.kill() if not b.alive() else b.stop()


@pytest.fixture(params=sorted(CLIENTS))
def client_cls(request: pytest.FixtureRequest) -> type[Client]:
    return CLIENTS[request.param]  # type: ignore[no-any-return]


@pytest.fixture
def client(client_cls: type[Client], broker: EbbBroker) -> Iterator[Client]:
    c = client_cls(broker.bootstrap)
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Side:
    """One of the two brokers a side-by-side test runs against, with the same assertions."""

    name: str
    bootstrap: str

    @property
    def is_ebb(self) -> bool:
        return self.name == "ebb-broker"


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def side(request: pytest.FixtureRequest) -> Side:
    """The shared ebb-broker, then the shared Apache Kafka 4.3.1: where a behaviour is Kafka's, a test
    taking `side` asserts it on both."""
    if request.param == "ebb-broker":
        return Side("ebb-broker", request.getfixturevalue("broker").bootstrap)
    return Side("apache-kafka", request.getfixturevalue("apache_kafka_broker").bootstrap_servers)
