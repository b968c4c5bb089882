"""Kafka targets for the operator's e2e tests: every test runs against each cluster kind available."""

from __future__ import annotations

import pytest
from tests.harness.kafka import KafkaBroker


@pytest.fixture(params=["apache-kafka"])
def kafka_bootstrap(request: pytest.FixtureRequest) -> str:
    """Bootstrap servers of a running cluster (Apache Kafka from tests/harness)."""
    broker: KafkaBroker = request.getfixturevalue("apache_kafka_broker")
    return broker.bootstrap_servers
