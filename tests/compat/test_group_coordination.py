"""Group coordination as clients see it, asserted alike against ebb-broker and Apache Kafka 4.3.1.

Every test runs against both brokers with the same assertions. The brokers of this module keep Kafka's
default `group.initial.rebalance.delay.ms` (3000: the behaviour under test; the tier's shared brokers set
it to 0 for speed) and check offset retention every second with the smallest retention Kafka accepts
(`offsets.retention.minutes=1`), so KIP-211 expiry is observable within the tier's time budget.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within
from harness.ebb_broker import EbbBroker
from harness.kafka import apache_kafka

# Kafka's defaults, except what a test must observe in seconds rather than minutes or days.
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "3000",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "1000",
}


@dataclass(frozen=True)
class Target:
    name: str
    bootstrap: str


@pytest.fixture(scope="module")
def ebb_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("ebb-groups")
    broker = EbbBroker(root / "data", configs={"offsets.topic.num.partitions": "4", **GROUP_SETTINGS})
    broker.start()
    yield Target("ebb-broker", broker.bootstrap)
    assert broker.stop() == 0


@pytest.fixture(scope="module")
def kafka_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with apache_kafka(tmp_path_factory.mktemp("kafka-groups"), GROUP_SETTINGS) as kafka:
        yield Target("apache-kafka", kafka.bootstrap_servers)


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def target(request: pytest.FixtureRequest) -> Target:
    name = "ebb_target" if request.param == "ebb-broker" else "kafka_target"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def _topic(target: Target, partitions: int) -> str:
    name = f"groups-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


class Member:
    """A confluent-kafka consumer that records every assignment it is given (eager protocol)."""

    def __init__(self, target: Target, group: str, **conf: object):
        self.assignments: list[set[int]] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": target.bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                **conf,
            }
        )

    def subscribe(self, topic: str) -> None:
        self.consumer.subscribe(
            [topic], on_assign=lambda _c, parts: self.assignments.append({p.partition for p in parts})
        )

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        close_within(self.consumer, what=f"consumer of {self.consumer.memberid()}")


def _poll_until(members: list[Member], done: object, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.consumer.poll(0.1)
        if done():  # type: ignore[operator]
            return
    raise AssertionError(f"not reached within {timeout} s: {[m.assignments for m in members]}")


def test_consumers_started_together_share_the_first_generation(target: Target) -> None:
    """group.initial.rebalance.delay.ms: two consumers that subscribe at the same moment are both in the
    group's first generation; neither first takes every partition and then gives half back."""
    topic = _topic(target, partitions=2)
    group = f"together-{uuid.uuid4().hex[:8]}"
    members = [Member(target, group), Member(target, group)]
    try:
        for m in members:
            m.subscribe(topic)
        _poll_until(members, lambda: all(m.partitions() for m in members))
        # Without the delay the first consumer's record would read [{0, 1}, {0}]: a second generation.
        assert [m.assignments for m in members] in ([[{0}], [{1}]], [[{1}], [{0}]])
    finally:
        for m in members:
            m.close()
