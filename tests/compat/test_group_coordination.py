"""Group coordination as clients see it, asserted alike against ebb-broker and Apache Kafka 4.3.1.

Every test runs against both brokers with the same assertions. The brokers of this module keep Kafka's
default `group.initial.rebalance.delay.ms` (3000: the behaviour under test; the tier's shared brokers set
it to 0 for speed) and check offset retention every second with the smallest retention Kafka accepts
(`offsets.retention.minutes=1`), so KIP-211 expiry is observable within the tier's time budget: the
retention scenario starts with each broker (`_start_retention_scenario`) and its test, the module's last,
checks the outcome once the minute has passed, so the wait overlaps the other tests.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from ebb_broker.coordinator.offsets_records import GroupKey, OffsetKey, decode_key, partition_for
from harness.bounded import close_within
from harness.ebb_broker import EbbBroker
from harness.kafka import apache_kafka

# Kafka's defaults, except what a test must observe in seconds rather than minutes or days.
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "3000",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "1000",
}


@dataclass
class RetentionScenario:
    """Groups whose offsets were committed when the broker started (see test_offsets_retention)."""

    topic: str
    standalone: str  # committed through the Admin API, never joined
    emptied: str  # a consumer joined, committed and left
    live: str  # a consumer joined, committed and stays
    live_member: Member
    started: float  # time.monotonic() once every commit was made and the emptied group was empty


@dataclass
class Target:
    name: str
    bootstrap: str
    restart: Callable[[], object] = lambda: None  # stop and start again on the same data and port
    retention: RetentionScenario | None = None


@pytest.fixture(scope="module")
def ebb_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("ebb-groups")
    broker = EbbBroker(root / "data", configs={"offsets.topic.num.partitions": "4", **GROUP_SETTINGS})
    broker.start()
    target = Target("ebb-broker", broker.bootstrap, broker.restart)
    try:
        target.retention = _start_retention_scenario(target)
        yield target
    finally:
        if target.retention is not None:
            target.retention.live_member.close()
        assert broker.stop() == 0


@pytest.fixture(scope="module")
def kafka_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with apache_kafka(tmp_path_factory.mktemp("kafka-groups"), GROUP_SETTINGS) as kafka:
        target = Target("apache-kafka", kafka.bootstrap_servers, kafka.restart)
        try:
            target.retention = _start_retention_scenario(target)
            yield target
        finally:
            if target.retention is not None:
                target.retention.live_member.close()


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


# ---- static membership (KIP-345), on the tier's shared brokers (no initial delay) ---------------


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def fast_target(request: pytest.FixtureRequest) -> Target:
    """The tier's shared brokers (`group.initial.rebalance.delay.ms=0` on both)."""
    if request.param == "ebb-broker":
        return Target("ebb-broker", request.getfixturevalue("broker").bootstrap)
    return Target("apache-kafka", request.getfixturevalue("apache_kafka_broker").bootstrap_servers)


def _static(target: Target, group: str, instance: str) -> Member:
    # 6 s: Kafka's smallest session timeout (group.min.session.timeout.ms), so expiry is quick to see.
    return Member(target, group, **{"group.instance.id": instance, "session.timeout.ms": 6000})


def test_static_member_keeps_its_assignment_across_a_restart(fast_target: Target) -> None:
    """A static member that restarts within its session timeout gets its partition back under a new
    member id, and no rebalance reaches the other member; once both close (static members send no
    LeaveGroup) the group stays non-empty until their sessions expire, then DeleteGroups succeeds."""
    topic = _topic(fast_target, partitions=2)
    group = f"static-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": fast_target.bootstrap})
    a, b = _static(fast_target, group, "a"), _static(fast_target, group, "b")
    restarted: Member | None = None
    try:
        a.subscribe(topic)
        b.subscribe(topic)
        _poll_until([a, b], lambda: len(a.partitions()) == 1 and len(b.partitions()) == 1)
        a_before, b_before = list(a.assignments), b.partitions()
        old_member_id = b.consumer.memberid()
        b.close()
        restarted = _static(fast_target, group, "b")
        restarted.subscribe(topic)
        _poll_until([a, restarted], lambda: restarted.partitions() == b_before)
        a.consumer.poll(1.0)
        assert a.assignments == a_before, "the restart of b reached a as a rebalance"
        assert restarted.assignments == [b_before]
        assert restarted.consumer.memberid() != old_member_id
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert {m.group_instance_id for m in described.members} == {"a", "b"}
    finally:
        a.close()
        if restarted is not None:
            restarted.close()
    closed_at = time.monotonic()
    with pytest.raises(Exception, match=r"NON_EMPTY_GROUP|not empty"):
        admin.delete_consumer_groups([group])[group].result(30)
    deadline = closed_at + 30
    while True:
        try:
            admin.delete_consumer_groups([group])[group].result(30)
            break
        except Exception as exc:
            if "NON_EMPTY_GROUP" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert time.monotonic() - closed_at >= 5, "the static members left before their 6 s sessions expired"


def test_a_second_consumer_with_the_same_instance_id_fences_the_first(fast_target: Target) -> None:
    """KIP-345: the newest member with a group.instance.id wins; the stale one is told
    FENCED_INSTANCE_ID at its next heartbeat, which librdkafka raises as a fatal error."""
    topic = _topic(fast_target, partitions=1)
    group = f"fenced-{uuid.uuid4().hex[:8]}"
    first = _static(fast_target, group, "same")
    second: Member | None = None
    errors: list[KafkaError] = []
    try:
        first.subscribe(topic)
        _poll_until([first], lambda: first.partitions() == {0})
        second = _static(fast_target, group, "same")
        second.subscribe(topic)
        deadline = time.monotonic() + 30
        while not errors and time.monotonic() < deadline:
            second.consumer.poll(0.1)
            msg = first.consumer.poll(0.1)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
        assert errors, "the first consumer was never fenced"
        # librdkafka's text for FENCED_INSTANCE_ID (82), raised as a fatal consumer error.
        assert errors[0].code() == KafkaError._FATAL
        assert "Static consumer fenced by other consumer with same group.instance.id" in errors[0].str()
        _poll_until([second], lambda: second.partitions() == {0})
    finally:
        first.close()
        if second is not None:
            second.close()


# ---- a broker restart (a coordinator failover on one node) -------------------------------------------


def _commit_retrying(member: Member, topic: str, offset: int, timeout: float = 60) -> None:
    """A member's synchronous commit, retried while the restarted coordinator becomes available."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            member.consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            return
        except KafkaException as exc:
            error = exc.args[0]
            assert error.retriable() and time.monotonic() < deadline, f"commit failed: {error}"
            member.consumer.poll(0.5)


def test_group_members_carry_on_after_a_restart(target: Target) -> None:
    """After a restart the coordinator reloads the group from __consumer_offsets with its members, as
    Kafka's coordinator does after a failover: the member keeps its member id and assignment (no
    rebalance) and its commit with the generation it had is accepted; a member that left stays gone."""
    topic = _topic(target, partitions=2)
    group = f"failover-{uuid.uuid4().hex[:8]}"
    # Reconnect within a second of the broker's return (librdkafka backs off up to 10 s by default).
    member = Member(target, group, **{"session.timeout.ms": 30000, "reconnect.backoff.max.ms": 1000})
    try:
        member.subscribe(topic)
        _poll_until([member], lambda: member.partitions() == {0, 1})
        _commit_retrying(member, topic, 3)
        member_id = member.consumer.memberid()
        target.restart()
        _commit_retrying(member, topic, 5)  # needs the member and generation the coordinator reloaded
        for _ in range(5):
            member.consumer.poll(0.3)  # a few heartbeats (every 500 ms) reach the reloaded group
        assert member.assignments == [{0, 1}], "the restart caused a rebalance"
        assert member.consumer.memberid() == member_id
        admin = AdminClient({"bootstrap.servers": target.bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert [m.member_id for m in described.members] == [member_id]
        assert _committed_offsets(target, group, topic) == 5
    finally:
        member.close()


# ---- offset retention (KIP-211) -------------------------------------------------------------------


def _committed_offsets(target: Target, group: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    result = admin.list_consumer_group_offsets([request])[group].result(30)
    return int(result.topic_partitions[0].offset)


def _standalone_commit(target: Target, group: str, topic: str, offset: int) -> None:
    """AlterConsumerGroupOffsets (OffsetCommit, generation -1), retried while the coordinator loads: a
    fresh Kafka answers NOT_COORDINATOR (or nothing, while it creates __consumer_offsets) at first."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    deadline = time.monotonic() + 90
    while True:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])
        try:
            result = admin.alter_consumer_group_offsets([request], request_timeout=15)[group].result(30)
            problem: object = result.topic_partitions[0].error
            if problem is None:
                return
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            problem = exc
        assert time.monotonic() < deadline, f"standalone commit failed: {problem}"
        time.sleep(0.5)


def _start_retention_scenario(target: Target) -> RetentionScenario:
    """Three groups commit to one topic: a standalone commit, a consumer that leaves, one that stays."""
    topic = _topic(target, partitions=1)
    suffix = uuid.uuid4().hex[:8]
    standalone, emptied, live = f"standalone-{suffix}", f"emptied-{suffix}", f"live-{suffix}"
    _standalone_commit(target, standalone, topic, 5)
    # The live member rides out the broker restart of test_group_members_carry_on_after_a_restart.
    staying_conf = {
        "max.poll.interval.ms": 600000,
        "session.timeout.ms": 30000,
        "reconnect.backoff.max.ms": 1000,
    }
    leaving, staying = Member(target, emptied), Member(target, live, **staying_conf)
    try:
        leaving.subscribe(topic)
        staying.subscribe(topic)
        _poll_until([leaving, staying], lambda: leaving.partitions() == staying.partitions() == {0})
        leaving.consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        staying.consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
    finally:
        leaving.close()  # LeaveGroup: the group is Empty from now on
    started = time.monotonic()
    assert [_committed_offsets(target, g, topic) for g in (standalone, emptied, live)] == [5, 7, 9]
    return RetentionScenario(topic, standalone, emptied, live, staying, started)


def _latest_consumer_offsets_records(target: Target, groups: set[str]) -> dict[object, bytes | None]:
    """The latest record per key of `groups` in __consumer_offsets, read with a plain consumer."""
    reader = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    latest: dict[object, bytes | None] = {}
    try:
        partitions = {partition_for(g, 4) for g in groups}  # offsets.topic.num.partitions=4 on both
        reader.assign([TopicPartition("__consumer_offsets", p, OFFSET_BEGINNING) for p in partitions])
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        while at_end != partitions and time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            key = decode_key(msg.key()) if msg.key() else None
            if isinstance(key, OffsetKey | GroupKey) and key.group in groups:
                latest[key] = msg.value()
        assert at_end == partitions, "__consumer_offsets was not read to its end"
    finally:
        close_within(reader, what="__consumer_offsets reader")
    return latest


def test_offsets_of_empty_and_standalone_groups_expire_with_tombstones(target: Target) -> None:
    """offsets.retention.minutes (KIP-211): once a group has been Empty that long (a standalone commit:
    since the commit) its offsets and then the group are gone, with tombstones in __consumer_offsets; a
    Stable group keeps the offsets of the topic it consumes. Runs last: the minute started with the
    broker."""
    scenario = target.retention
    assert scenario is not None
    remaining = scenario.started + 60 - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
    expired = {scenario.standalone, scenario.emptied}
    deadline = time.monotonic() + 30
    while any(_committed_offsets(target, g, scenario.topic) != OFFSET_INVALID for g in expired):
        assert time.monotonic() < deadline, "offsets still there 90 s after their group emptied"
        time.sleep(1)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    listed = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert not expired & listed, "groups left without offsets are deleted"
    assert scenario.live in listed and _committed_offsets(target, scenario.live, scenario.topic) == 9
    records = _latest_consumer_offsets_records(target, expired | {scenario.live})
    for group in expired:
        assert (
            OffsetKey(group, scenario.topic, 0) in records
            and records[OffsetKey(group, scenario.topic, 0)] is None
        )
        assert records.get(GroupKey(group), b"") is None, f"no group tombstone for {group}"
    assert records[OffsetKey(scenario.live, scenario.topic, 0)] is not None
