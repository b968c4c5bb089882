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


@pytest.fixture(scope="module")
def apache_kafka_cluster3(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KafkaCluster]:
    """A 3-node KRaft cluster (RF=3, min.insync.replicas=2; `harness.kafka_cluster`), one per module
    (three JVMs, stopped when the module's tests are done), every node running when a test starts: a
    node a test stopped is started again before the next test (not at the end of the one that stopped
    it: a restart waits for the node's old session to end, up to 45 s, wasted on the module's last
    test). A test that freezes a node thaws it itself."""
    with apache_kafka_cluster(tmp_path_factory.mktemp("apache-kafka-cluster")) as cluster:
        pytestconfig.stash.setdefault(_START_TIMES, []).append(cluster.start_seconds)
        yield cluster
        for node in cluster.nodes:
            assert not node.frozen, f"a test left node {node.node_id} frozen"


@pytest.fixture
def kafka_cluster3(apache_kafka_cluster3: KafkaCluster) -> KafkaCluster:
    """`apache_kafka_cluster3` with every node running (stopped ones started again first)."""
    for node in apache_kafka_cluster3.nodes:
        assert not node.frozen, f"a test left node {node.node_id} frozen"
        if not node.running:
            node.start()
    return apache_kafka_cluster3


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for seconds in config.stash.get(_START_TIMES, []):
        terminalreporter.write_line(f"Apache Kafka harness: KRaft broker started in {seconds:.1f}s")
