"""Group coordination and dynamic configs as clients and Kafka's tools see them, asserted alike against
ebb-broker and Apache Kafka 4.3.1.

Every test runs against both brokers with the same assertions. The brokers of this module are its own:
they keep Kafka's default `group.initial.rebalance.delay.ms` (3000: a behaviour under test; the tier's
shared brokers set it to 0 for speed), their cluster-wide defaults are changed by the dynamic config
tests, they are restarted by the failover test, and they check offset retention every second with the
smallest retention Kafka accepts (`offsets.retention.minutes=1`), so KIP-211 expiry is observable within
the tier's time budget: the retention scenario starts with each broker (`_start_retention_scenario`)
and its test, the module's last, checks the outcome once the minute has passed, so the wait overlaps the
other tests.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
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
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from ebb_formats.consumer_offsets import GroupMetadataKey, OffsetCommitKey, decode_key, partition_for
from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker
from harness.kafka import apache_kafka, kafka_tool
from tests.compat.wire import Wire

# Kafka's defaults, except what a test must observe in seconds rather than minutes or days.
GROUP_SETTINGS = {
    "log.retention.check.interval.ms": "1000",  # as harness.kafka.FAST_SETTINGS
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
    return request.getfixturevalue(name)


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


def _poll_until(members: list[Member], done: Callable[[], bool], timeout: float = 40) -> None:
    """Poll every member (their callbacks run inside poll) until ``done``."""

    def polled() -> bool:
        for m in members:
            m.consumer.poll(0.1)
        return done()

    try:
        until("the members' assignments", polled, timeout, interval=0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: {[m.assignments for m in members]}") from None


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
        # kafka-consumer-groups shows each static member with its group.instance.id and one partition.
        members = kafka_tool(
            "kafka-consumer-groups", "--bootstrap-server", fast_target.bootstrap,
            "--describe", "--group", group, "--members",
        ).stdout  # fmt: skip
        lines = members.splitlines()
        columns = next(line for line in lines if "GROUP-INSTANCE-ID" in line).split()
        rows = [line.split() for line in lines if line.startswith(group)]
        instance, partitions = columns.index("GROUP-INSTANCE-ID"), columns.index("#PARTITIONS")
        assert sorted((r[instance], r[partitions]) for r in rows) == [("a", "1"), ("b", "1")], members
        assert restarted.consumer.memberid() in {r[columns.index("CONSUMER-ID")] for r in rows}
    finally:
        a.close()
        if restarted is not None:
            restarted.close()
    closed_at = time.monotonic()
    with pytest.raises(Exception, match=r"NON_EMPTY_GROUP|not empty"):
        admin.delete_consumer_groups([group])[group].result(30)

    def deleted() -> bool:
        try:
            admin.delete_consumer_groups([group])[group].result(30)
            return True
        except Exception as exc:
            if "NON_EMPTY_GROUP" not in str(exc):
                raise
            return False

    until(
        "the group deleted once its static members' sessions expired",
        deleted,
        closed_at + 30 - time.monotonic(),
        0.5,
    )
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

        def fenced() -> bool:
            second.consumer.poll(0.1)
            msg = first.consumer.poll(0.1)
            error = msg.error() if msg is not None else None
            if error is not None:
                errors.append(error)
            return bool(errors)

        until("the first consumer fenced", fenced, 30, interval=0)
        # librdkafka's text for FENCED_INSTANCE_ID (82), raised as a fatal consumer error.
        assert errors[0].code() == KafkaError._FATAL
        assert "Static consumer fenced by other consumer with same group.instance.id" in errors[0].str()
        _poll_until([second], lambda: second.partitions() == {0})
    finally:
        first.close()
        if second is not None:
            second.close()


# ---- dynamic broker configs and group configs ------------------------------------------------------


def _produce_old_records(target: Target, topic: str, count: int) -> None:
    """Records an hour old: a 60 s retention.ms makes them deletable at once."""
    producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=0, timestamp=an_hour_ago)
    assert producer.flush(30) == 0


def _low_watermark(target: Target, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"wm-{uuid.uuid4().hex[:8]}"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[0])
    finally:
        close_within(consumer, what="watermark reader")


def _describe(target: Target, resource: ConfigResource) -> dict[str, ConfigEntry]:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    return admin.describe_configs([resource])[resource].result(30)


def _entry(target: Target, resource: ConfigResource, key: str) -> tuple[str | None, object]:
    """(value, source): librdkafka hands the source over as Kafka's int, not as its ConfigSource enum."""
    entry = _describe(target, resource)[key]
    return entry.value, entry.source


def _node_id(target: Target) -> str:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    return str(admin.describe_cluster().result(30).nodes[0].id)


def _configs_tool(target: Target, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return kafka_tool(
        "kafka-configs",
        "--bootstrap-server",
        target.bootstrap,
        "--entity-type",
        "brokers",
        *args,
        check=check,
    )


def test_a_cluster_wide_default_set_with_kafka_configs_takes_effect_without_a_restart(target: Target) -> None:
    """`kafka-configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=60000`:
    a topic without its own retention.ms loses its hour-old records at the next retention check, a topic
    with an override keeps them; DescribeConfigs names the dynamic default as the source; a key Kafka
    does not change at runtime is refused."""
    plain, own = _topic(target, partitions=1), f"own-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(own, 1, 1, config={"retention.ms": "3600000000"})])[own].result(30)
    for topic in (plain, own):
        _produce_old_records(target, topic, 3)
    node = _node_id(target)
    try:
        _configs_tool(target, "--entity-default", "--alter", "--add-config", "log.retention.ms=60000")
        until(
            "the old records deleted by the new default", lambda: _low_watermark(target, plain) == 3, 30, 0.5
        )
        assert _low_watermark(target, own) == 0, "a topic override must win over the broker default"
        described = _configs_tool(target, "--entity-default", "--describe").stdout
        synonyms = "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=60000}"
        assert f"log.retention.ms=60000 sensitive=false {synonyms}" in described
        topic_conf = _describe(target, ConfigResource(ResourceType.TOPIC, plain))["retention.ms"]
        assert (topic_conf.value, topic_conf.source) == (
            "60000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
        broker_conf = _describe(target, ConfigResource(ResourceType.BROKER, node))
        retention = broker_conf["log.retention.ms"]
        assert (retention.value, retention.source, retention.is_read_only) == (
            "60000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
            False,
        )
        assert broker_conf["offsets.topic.num.partitions"].is_read_only
        # What kafka-configs would send, without another JVM: a key Kafka never changes at runtime.
        refused = _incremental_alter(target, "", [("offsets.topic.num.partitions", 0, "7")])
        assert refused == (42, "Cannot update these configs dynamically: [offsets.topic.num.partitions]")
    finally:
        assert _incremental_alter(target, "", [("log.retention.ms", 1, None)]) == (0, None)
    until(  # Kafka applies the deletion asynchronously
        "the dynamic default removed",
        lambda: _entry(target, ConfigResource(ResourceType.BROKER, node), "log.retention.ms")[1] != 3,
        30,
        0.5,
    )


def _incremental_alter(
    target: Target, name: str, ops: list[tuple[str, int, str | None]]
) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on a BROKER resource as raw protocol, (error code, message): librdkafka and
    kafka-python refuse the default resource name "" that kafka-configs --entity-default sends."""
    R = IncrementalAlterConfigsRequest[0]
    Res = R.AlterConfigsResource
    configs = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    request = R(resources=[Res(resource_type=4, resource_name=name, configs=configs)], validate_only=False)
    wire = Wire(target.bootstrap)
    try:
        wire.send_raw(wire.frame(request, 0))
        response = IncrementalAlterConfigsResponse.decode(wire.recv_frame(), version=0, header=True)
    finally:
        wire.close()
    (result,) = response.responses
    return result.error_code, result.error_message


def _reset_broker_configs(target: Target, name: str, keys: list[str]) -> None:
    """IncrementalAlterConfigs DELETE (operation 1) of dynamic broker configs."""
    assert _incremental_alter(target, name, [(k, 1, None) for k in keys]) == (0, None)


def test_a_broker_level_dynamic_config_wins_over_the_default(target: Target) -> None:
    """IncrementalAlterConfigs on this broker's id (kafka-configs --entity-name <id>) with kafka-python:
    the effective value is the broker's dynamic config (DYNAMIC_BROKER_CONFIG), over the static one."""
    node = _node_id(target)
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    try:
        resource = KafkaConfigResource(
            ConfigResourceType.BROKER, node, configs={"log.segment.bytes": "2097152"}
        )
        assert admin.alter_configs([resource]) == {"broker": {node: "OK"}}
    finally:
        admin.close()
    try:
        resource = ConfigResource(ResourceType.BROKER, node)
        expected = ("2097152", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        until(  # Kafka applies a broker's dynamic config asynchronously
            f"log.segment.bytes described as {expected}",
            lambda: _entry(target, resource, "log.segment.bytes") == expected,
            30,
            0.5,
        )
    finally:
        _reset_broker_configs(target, node, ["log.segment.bytes"])


def test_group_configs_describe_as_kafka_does_for_a_classic_group(target: Target) -> None:
    """DescribeConfigs on a GROUP resource (KIP-848): the consumer session and heartbeat defaults with
    their broker synonyms, as Kafka 4.3 answers for any group (Kafka also lists share- and streams-group
    configs, and lets them be altered; on ebb-broker these two are read-only)."""
    entries = _describe(target, ConfigResource(ResourceType.GROUP, f"any-{uuid.uuid4().hex[:8]}"))
    got = {
        key: (e.value, e.source, e.is_default, [(s.name, s.value) for s in e.synonyms.values()])
        for key, e in entries.items()
        if key in ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")
    }
    default = ConfigSource.DEFAULT_CONFIG.value
    assert got == {
        "consumer.session.timeout.ms": (
            "45000",
            default,
            True,
            [("group.consumer.session.timeout.ms", "45000")],
        ),
        "consumer.heartbeat.interval.ms": (
            "5000",
            default,
            True,
            [("group.consumer.heartbeat.interval.ms", "5000")],
        ),
    }


# ---- a broker restart (a coordinator failover on one node) -------------------------------------------


_COORDINATOR_MOVING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError._TRANSPORT,
    KafkaError._WAIT_COORD,  # librdkafka has not found the restarted coordinator yet (a loaded machine)
    KafkaError.REQUEST_TIMED_OUT,
}


def _commit_retrying(member: Member, topic: str, offset: int, timeout: float = 110) -> None:
    """A member's synchronous commit, retried while the restarted coordinator becomes available (within
    the member's 120 s session: a JVM restarting on a loaded machine took over a minute)."""

    def committed() -> bool:
        try:
            member.consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            return True
        except KafkaException as exc:
            error = exc.args[0]
            # librdkafka does not flag a loading coordinator as retriable; a restarted Kafka answers so.
            if not (error.retriable() or error.code() in _COORDINATOR_MOVING):
                raise
            member.consumer.poll(0.5)
            return False

    until("the commit accepted by the restarted coordinator", committed, timeout, interval=0)


def test_group_members_carry_on_after_a_restart(target: Target) -> None:
    """After a restart the coordinator reloads the group from __consumer_offsets with its members, as
    Kafka's coordinator does after a failover: the member keeps its member id and assignment (no
    rebalance) and its commit with the generation it had is accepted; a member that left stays gone."""
    topic = _topic(target, partitions=2)
    group = f"failover-{uuid.uuid4().hex[:8]}"
    # Reconnect within a second of the broker's return (librdkafka backs off up to 10 s by default). The
    # session outlasts the restart: librdkafka drops its member id itself once a session passes without
    # a heartbeat answered, and a JVM restarting on a loaded 2-core machine can take longer than 30 s.
    member = Member(target, group, **{"session.timeout.ms": 120000, "reconnect.backoff.max.ms": 1000})
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
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])

    def committed() -> object:
        result = admin.alter_consumer_group_offsets([request], request_timeout=15)[group].result(30)
        error = result.topic_partitions[0].error
        if error is not None:
            raise KafkaException(error)
        return True

    until(
        "the standalone commit accepted",
        committed,
        90,
        0.5,
        ignore=(KafkaException, concurrent.futures.TimeoutError),
    )


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

        def read() -> bool:
            msg = reader.poll(0.5)
            if msg is None:
                return False
            error, raw_key = msg.error(), msg.key()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition() or 0)
            elif error is None:
                key = decode_key(raw_key) if raw_key else None
                if isinstance(key, OffsetCommitKey | GroupMetadataKey) and key.group in groups:
                    latest[key] = msg.value()
            return at_end == partitions

        until("__consumer_offsets read to its end", read, 30, interval=0)
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
    until(
        "the offsets expired 90 s after their group emptied",
        lambda: all(_committed_offsets(target, g, scenario.topic) == OFFSET_INVALID for g in expired),
        30,
        1,
    )
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    listed = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert not expired & listed, "groups left without offsets are deleted"
    assert scenario.live in listed and _committed_offsets(target, scenario.live, scenario.topic) == 9
    records = _latest_consumer_offsets_records(target, expired | {scenario.live})
    for group in expired:
        assert (
            OffsetCommitKey(group, scenario.topic, 0) in records
            and records[OffsetCommitKey(group, scenario.topic, 0)] is None
        )
        assert records.get(GroupMetadataKey(group), b"") is None, f"no group tombstone for {group}"
    assert records[OffsetCommitKey(scenario.live, scenario.topic, 0)] is not None
