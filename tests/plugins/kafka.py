"""Pytest plugin: one Apache Kafka broker per test session, shared by every tier that asks for it.

Registered from tests/conftest.py. Starting the JVM broker costs seconds, so it is started lazily by the
first test that requests `apache_kafka_broker` and stopped when the session ends; tests isolate themselves
with their own topic and group names. The start time is reported in the terminal summary.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.kafka import KafkaBroker, apache_kafka
from harness.kafka_cluster import KafkaCluster, apache_kafka_cluster

_START_TIMES = pytest.StashKey[list[float]]()


@pytest.fixture(scope="session")
def apache_kafka_broker(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KafkaBroker]:
    """A running single-node KRaft Apache Kafka (fast settings, see `harness.kafka.FAST_SETTINGS`)."""
    with apache_kafka(tmp_path_factory.mktemp("apache-kafka")) as broker:
        pytestconfig.stash.setdefault(_START_TIMES, []).append(broker.start_seconds)
        yield broker


@pytest.fixture(scope="session")
def apache_kafka_cluster3(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KafkaCluster]:
    """A running 3-node KRaft cluster (RF=3, min.insync.replicas=2; `harness.kafka_cluster`), one per
    session: tests that stop or freeze a node start or thaw it again before they end."""
    with apache_kafka_cluster(tmp_path_factory.mktemp("apache-kafka-cluster")) as cluster:
        pytestconfig.stash.setdefault(_START_TIMES, []).append(cluster.start_seconds)
        yield cluster
        for node in cluster.nodes:
            assert node.running and not node.frozen, f"a test left node {node.node_id} stopped or frozen"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for seconds in config.stash.get(_START_TIMES, []):
        terminalreporter.write_line(f"Apache Kafka harness: KRaft broker started in {seconds:.1f}s")
