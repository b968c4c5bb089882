"""The clusters every operator test runs against: an ebb-broker and Apache Kafka."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.ebb_broker import EbbBroker
from harness.kafka import KafkaBroker


@pytest.fixture(scope="session")
def operator_ebb_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    """One ebb-broker for the operator's tests (tests isolate themselves by topic and group names)."""
    root = tmp_path_factory.mktemp("operator-ebb-broker")
    # Retention checked every second and client quota rates over 3 windows of 1 s, as the Apache Kafka
    # harness sets them: freed bytes and a throttled client show quickly.
    configs = {
        "offsets.topic.num.partitions": "4",
        "log.retention.check.interval.ms": "1000",
        "quota.window.num": "3",
    }
    broker = EbbBroker(root / "data", configs=configs)
    broker.start()
    yield broker
    assert broker.stop() == 0, "ebb-broker did not shut down cleanly"


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def kafka_bootstrap(request: pytest.FixtureRequest) -> str:
    """Bootstrap servers of a running cluster of each kind."""
    if request.param == "ebb-broker":
        ebb: EbbBroker = request.getfixturevalue("operator_ebb_broker")
        return ebb.bootstrap
    kafka: KafkaBroker = request.getfixturevalue("apache_kafka_broker")
    return kafka.bootstrap_servers


@pytest.fixture
def kafka_kind(request: pytest.FixtureRequest, kafka_bootstrap: str) -> str:
    """Which kind of cluster `kafka_bootstrap` is: "ebb-broker" or "apache-kafka"."""
    return str(request.node.callspec.params["kafka_bootstrap"])
