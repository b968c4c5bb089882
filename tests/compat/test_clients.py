"""The same user scenarios through confluent-kafka, kafka-python and aiokafka against ebb-broker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.bounded import until
from harness.ebb_broker import EbbBroker
from tests.compat.clients import CLIENTS, OFFSET_OUT_OF_RANGE, POLICY_VIOLATION, BrokerError, Client, Member

INVALID_CONFIG = 40


def _records(n: int, prefix: str = "v") -> list[tuple[bytes | None, bytes | None]]:
    return [(f"k{i % 7}".encode(), f"{prefix}{i}".encode() * 20) for i in range(n)]


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_then_consume_from_earliest(client: Client, topic: str, compression: str) -> None:
    client.create_topic(topic)
    sent = _records(40)
    offsets = client.produce(topic, sent, compression=compression)
    assert sorted(offsets) == list(range(40))
    got = client.consume(topic, 40)
    assert [r.offset for r in got] == list(range(40))
    assert [(r.key, r.value) for r in got] == sent


def test_consume_from_latest_sees_only_new_records(client: Client, topic: str) -> None:
    client.create_topic(topic)
    client.produce(topic, _records(5, "old"))
    got = client.consume(
        topic, 3, reset="latest", produce_after_join=lambda: client.produce(topic, _records(3, "new"))
    )
    assert [r.offset for r in got] == [5, 6, 7]
    assert all(r.value is not None and r.value.startswith(b"new") for r in got)


def test_group_rebalances_between_two_members(client: Client, topic: str) -> None:
    client.create_topic(topic, partitions=4)
    group = f"grp-{topic}"
    a = client.member(group, topic)
    b = None
    try:
        _poll_until(lambda: a.assignment() == {0, 1, 2, 3}, a)
        b = second = client.member(group, topic)
        _poll_until(
            lambda: (
                a.assignment() | second.assignment() == {0, 1, 2, 3}
                and not a.assignment() & second.assignment()
                and bool(a.assignment())
                and bool(second.assignment())
            ),
            a,
            second,
        )
        b.close()
        b = None
        _poll_until(lambda: a.assignment() == {0, 1, 2, 3}, a)
    finally:
        a.close()
        if b is not None:
            b.close()


def _poll_until(cond: Callable[[], bool], *members: Member, timeout: float = 45) -> None:
    """Poll every member (their rebalances complete inside poll) until ``cond``."""

    def polled() -> bool:
        for m in members:
            m.poll()
        return cond()

    try:
        until("the members' assignments", polled, timeout, interval=0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: {', '.join(str(m.assignment()) for m in members)}") from None


def test_commit_then_fetch_committed_offset(client: Client, topic: str) -> None:
    client.create_topic(topic)
    client.produce(topic, _records(10))
    group = f"grp-{topic}"
    assert client.committed(group, topic, 0) is None
    client.commit(group, topic, 0, 7)
    assert client.committed(group, topic, 0) == 7
    client.commit(group, topic, 0, 9)
    assert client.committed(group, topic, 0) == 9


def test_delete_records_moves_the_low_watermark(client: Client, topic: str) -> None:
    client.create_topic(topic)
    client.produce(topic, _records(10))
    assert client.delete_records(topic, 0, 4) == 4
    assert client.earliest(topic, 0) == 4
    with pytest.raises(BrokerError) as info:
        client.fetch_at(topic, 0, 2)
    assert info.value.code == OFFSET_OUT_OF_RANGE
    assert [r.offset for r in client.fetch_at(topic, 0, 4)][:1] == [4]
    # Idempotent and never backwards (KIP-107).
    assert client.delete_records(topic, 0, 2) == 4
    # -1 deletes up to the high watermark.
    assert client.delete_records(topic, 0, -1) == 10
    assert client.earliest(topic, 0) == client.latest(topic, 0) == 10


def test_delete_records_refusals_are_per_partition_errors(client: Client, topic: str) -> None:
    client.create_topic(topic)
    client.produce(topic, _records(3))
    with pytest.raises(BrokerError) as info:
        client.delete_records(topic, 0, 99)
    assert info.value.code == OFFSET_OUT_OF_RANGE
    compacted = topic + "-c"
    client.create_topic(compacted, configs={"cleanup.policy": "compact"})
    client.produce(compacted, _records(3))
    with pytest.raises(BrokerError) as info:
        client.delete_records(compacted, 0, 1)
    assert info.value.code == POLICY_VIOLATION
    assert client.earliest(topic, 0) == 0 and client.earliest(compacted, 0) == 0


def test_describe_and_alter_configs_round_trip(client: Client, topic: str) -> None:
    client.create_topic(topic, configs={"retention.ms": "86400000"})
    configs = client.describe_configs(topic)
    assert configs["retention.ms"] == "86400000"
    assert configs["cleanup.policy"] == "delete"
    assert configs["retention.commitoffset.ms"] == "-1"
    assert configs["tombstone.null.value.enable"] == "true"
    client.alter_configs(topic, {"retention.commitoffset.ms": "3600000"})
    after = client.describe_configs(topic)
    assert after["retention.commitoffset.ms"] == "3600000"
    with pytest.raises(BrokerError) as info:
        client.alter_configs(topic, {"retention.commitoffset.ms": "not-a-number"})
    assert info.value.code == INVALID_CONFIG
    assert client.describe_configs(topic)["retention.commitoffset.ms"] == "3600000"


@pytest.mark.parametrize("client_name", sorted(CLIENTS))
def test_low_watermark_survives_a_restart(broker_factory: Callable[..., EbbBroker], client_name: str) -> None:
    b = broker_factory()
    c = CLIENTS[client_name](b.bootstrap)
    try:
        c.create_topic("lw")
        c.produce("lw", _records(20))
        assert c.delete_records("lw", 0, 12) == 12
    finally:
        c.close()
    b.restart()
    c = CLIENTS[client_name](b.bootstrap)
    try:
        assert c.earliest("lw", 0) == 12
        assert c.latest("lw", 0) == 20
        assert [r.offset for r in c.consume("lw", 8)] == list(range(12, 20))
    finally:
        c.close()
