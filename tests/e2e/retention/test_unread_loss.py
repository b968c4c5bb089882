"""Unread loss and who pins the disk, end to end on Apache Kafka, against ground truth.

On Apache Kafka only: the account is the operator's, made from commits, log starts and record times,
which ebb-broker serves through the same calls (the retention policy and budget tests run on both
brokers); ebb-broker's own count at deletion time is tests/compat/test_unread_loss.py. One broker keeps
these three Spark runs and a restart out of the e2e tier's time budget.

Two topics under one policy (consumedRetention 1h, forcedRetention 2h: retention.ms) and two counted
groups, `dead` at 5 and `live` further on:

1. `kept` holds 20 records three hours old and 10 fresh ones (its segment is young: retention keeps it),
   `live` is at 25. The first run reports who pins the disk there: `dead` alone sets the cut, and alone
   keeps 15 records (5 up to 20, where consumedRetention stops the cut), with their bytes, and the oldest
   record it has not read is three hours old.
2. `lost` is empty at that run; then 20 records three hours old arrive, and the retention.ms the run set
   deletes them at once: 15 that `dead` never read, 5 that `live` (at 15) never read. The next run counts
   them (status, the counter, an Event).
3. Someone's DeleteRecords moves the log start to 25; the operator restarts; its first run counts only the
   5 records each lost since: the totals are the new log start minus each group's commit, counted once.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient

from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique
from tests.e2e.retention.policies import (
    apply_policy,
    event,
    events,
    metric_sample,
    patch_policy,
    run_after,
    run_id,
)

HOUR_MS = 3_600_000
POLICY = "loss"


def _produce(bootstrap: str, topic: str, records: dict[int, list[int]]) -> None:
    """Per partition, one record per age (ms), oldest first."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    now = int(time.time() * 1000)
    for partition, ages in records.items():
        for age in ages:
            producer.produce(topic, value=b"v" * 200, partition=partition, timestamp=now - age)
    assert producer.flush(30) == 0


def _unread(obj: dict[str, Any], name: str) -> dict[str, tuple[int, str]]:
    """A topic's status unread[]: group -> (records, since)."""
    (topic,) = [t for t in obj["status"]["topics"] if t["topic"] == name]
    return {u["group"]: (u["records"], u["since"]) for u in topic.get("unread", [])}


def _stop(operator: OperatorProcess) -> None:
    """A restart's first half: SIGTERM, as Kubernetes stops a pod (the process releases its lease)."""
    os.killpg(operator.popen.pid, signal.SIGTERM)
    operator.popen.wait(30)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kafka_bootstrap", ["apache-kafka"], indirect=True)
def test_records_deleted_before_a_group_read_them_are_counted_once_across_restarts(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_bootstrap: str,
    start_operator: Callable[[str], OperatorProcess],
) -> None:
    bootstrap, ns, cp = kafka_bootstrap, k8s_namespace, control_plane
    kept, lost, dead, live = unique("kept"), unique("lost"), unique("dead"), unique("live")
    create_topic(bootstrap, kept, 1)
    create_topic(bootstrap, lost, 1)
    _produce(bootstrap, kept, {0: [3 * HOUR_MS] * 20 + [0] * 10})
    commit(bootstrap, dead, [(kept, 0, 5), (lost, 0, 5)])
    commit(bootstrap, live, [(kept, 0, 25), (lost, 0, 15)])
    apply_policy(cp, ns, POLICY, {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": [kept, lost]},
        "consumers": {"include": [dead, live]},
        "consumedRetention": "1h",
        "forcedRetention": "2h",
        "schedule": {"interval": "1h"},  # runs start when the spec changes
    })  # fmt: skip
    operator = start_operator(bootstrap)

    # 1. Who pins the disk: dead alone, with 15 records only it keeps, the oldest three hours old.
    first = run_after(cp, ns, POLICY)
    assert first["status"]["lastRun"]["outcome"] == "Succeeded", first["status"]
    (entry,) = [t for t in first["status"]["topics"] if t["topic"] == kept]
    (pin,) = entry["limiting"]
    assert (pin["group"], pin["lagRecords"], pin["pinnedRecords"]) == (dead, 25, 15)
    assert 0 < pin["pinnedBytes"] < pin["lagBytes"]
    assert 3 * 3600 <= pin["oldestUnreadAgeSeconds"] < 3 * 3600 + 600, pin
    assert not any(t.get("unread") for t in first["status"]["topics"])
    gauges = {
        "ebb_operator_policy_limiting_pinned_bytes": pin["pinnedBytes"],
        "ebb_operator_policy_limiting_oldest_unread_age_seconds": pin["oldestUnreadAgeSeconds"],
    }
    on_kept = {"namespace": ns, "policy": POLICY, "topic": kept, "group": dead}
    assert {name: metric_sample(operator, name, **on_kept) for name in gauges} == gauges

    # 2. Old records arrive on `lost`; the retention.ms the run set (forcedRetention) deletes them: 15
    # records dead never read, 5 that live never read. The next run counts them.
    _produce(bootstrap, lost, {0: [3 * HOUR_MS] * 20})
    wait_until(
        "the old records deleted by retention",
        lambda: log_start(bootstrap, lost, 0),
        60,
        until=lambda start: start == 20,
        interval=0.5,
    )
    patch_policy(cp, ns, POLICY, {"historyLimit": 2})
    second = run_after(cp, ns, POLICY, run_id(first))
    counted = _unread(second, lost)
    assert {g: n for g, (n, _) in counted.items()} == {dead: 15, live: 5}, second["status"]
    counter = "ebb_operator_unread_records_deleted_total"
    on_lost = {"namespace": ns, "policy": POLICY, "topic": lost}
    assert metric_sample(operator, counter, **on_lost, group=dead) == 15
    assert metric_sample(operator, counter, **on_lost, group=live) == 5
    (message,) = event(cp, ns, POLICY, "UnreadRecordsDeleted")
    assert f"{dead}: 15 of {lost} (partitions 0)" in message

    # 3. Someone deletes up to 25 by hand; the operator restarts and counts only what left since.
    _produce(bootstrap, lost, {0: [0] * 10})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([CkTopicPartition(lost, 0, 25)]).values():
        future.result(30)
    _stop(operator)
    operator = start_operator(bootstrap)
    patch_policy(cp, ns, POLICY, {"historyLimit": 3})
    third = run_after(cp, ns, POLICY, run_id(second))
    # Each total is the new log start minus the group's commit, counted since the second run.
    assert _unread(third, lost) == {dead: (25 - 5, counted[dead][1]), live: (25 - 15, counted[live][1])}
    assert [t["unreadCount"] for t in third["status"]["topics"] if t["topic"] == lost] == [2]
    assert metric_sample(operator, counter, **on_lost, group=dead) == 5
    assert metric_sample(operator, counter, **on_lost, group=live) == 5
    messages = wait_until(
        "a second UnreadRecordsDeleted Event",
        lambda: events(cp, ns, POLICY).get("UnreadRecordsDeleted", []),
        30,
        until=lambda found: len(found) == 2,
        interval=0.5,
    )
    assert any(f"{dead}: 5 of {lost} (partitions 0)" in m for m in messages), messages
