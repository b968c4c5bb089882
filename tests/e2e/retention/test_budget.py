"""spec.budget end to end, on ebb-broker and Apache Kafka: kubectl apply -> operator -> analysis -> broker.

Each policy has its own topic, written the same way: offsets 0-19 three hours old, 20-29 ninety minutes
old, 30-39 fresh. consumedRetention is 1h (offsets below 30 may go once consumed), and a budget of maxAge
2h needs the cut at 20. Two counted groups: `dead`, which stopped at 5, and `live` (required), at 35,
or on the eviction topic's second partition at 12. The consumed cut stops at the dead group's 5, so every
partition is still over budget after it; what happens then is each policy's action:

- Alert: nothing past 5 goes; condition Budget False OverBudget and an OverBudget Event.
- EvictSlowest: first as a dry run (it says what it would evict, and deletes nothing), then for real: the
  cut passes the dead group exactly as far as the budget needs (20, not the 30 consumedRetention would
  allow) and never past the required group (12 on partition 1), and status names the dead group with the
  records it loses unread on each partition.
- ThrottleProducers: a dry run sets no quota; the real run sets producer_byte_rate on the named client
  (DescribeClientQuotas shows it); once the dead group reads on and a run cuts under the budget, the quota
  is gone.

One operator runs the three policies side by side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, QuotaEntity
from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique
from tests.e2e.retention.policies import (
    apply_policy,
    event,
    metric_sample,
    patch_policy,
    run_after,
    run_id,
)

MINUTE_MS = 60_000
AGES_MIN = [180] * 20 + [90] * 10 + [0] * 10  # each offset's age in minutes
RATE = 1024 * 1024


def _produce(bootstrap: str, topic: str, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    now = int(time.time() * 1000)
    for partition in range(partitions):
        for age in AGES_MIN:
            producer.produce(topic, value=b"v" * 200, partition=partition, timestamp=now - age * MINUTE_MS)
    assert producer.flush(30) == 0


def _policy(bootstrap: str, topic: str, dead: str, live: str, budget: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": [topic]},
        "consumers": {"include": [dead, live], "required": [live]},
        "consumedRetention": "1h",
        "schedule": {"interval": "1h"},  # runs start when the spec changes
        "budget": {"maxAge": "2h", **budget},
    }


def _budget(obj: dict[str, Any]) -> tuple[str, str, str]:
    (c,) = [c for c in obj["status"]["conditions"] if c["type"] == "Budget"]
    return c["status"], c["reason"], c["message"]


@pytest.mark.timeout(600)
def test_a_budget_alerts_evicts_or_throttles_a_partition_a_dead_group_keeps_over_it(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_bootstrap: str,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    bootstrap, ns, cp = kafka_bootstrap, k8s_namespace, control_plane
    dead, live = unique("dead"), unique("live")
    alerted, evicted, throttled, untouched = (unique(t) for t in ("alert", "evict", "throttle", "dry"))
    client, dry_client = unique("writer"), unique("dry-writer")
    writer, dry_writer = QuotaEntity.of(client_id=client), QuotaEntity.of(client_id=dry_client)
    for topic, partitions in ((alerted, 1), (evicted, 2), (throttled, 1), (untouched, 1)):
        create_topic(bootstrap, topic, partitions)
        _produce(bootstrap, topic, partitions)
    singles = (alerted, evicted, throttled, untouched)
    commit(bootstrap, dead, [(t, 0, 5) for t in singles] + [(evicted, 1, 5)])
    commit(bootstrap, live, [(t, 0, 35) for t in singles] + [(evicted, 1, 12)])

    def throttling(topic: str, who: str) -> dict[str, Any]:
        return _policy(bootstrap, topic, dead, live, {
            "action": "ThrottleProducers",
            "throttle": {"producers": [{"clientId": who}], "producerByteRate": "1Mi"},
        })  # fmt: skip

    # Four policies, run side by side by one operator.
    apply_policy(cp, ns, "alert", _policy(bootstrap, alerted, dead, live, {"action": "Alert"}))
    apply_policy(cp, ns, "evict", {
        **_policy(bootstrap, evicted, dead, live, {"action": "EvictSlowest"}), "dryRun": True
    })  # fmt: skip
    apply_policy(cp, ns, "throttle", throttling(throttled, client))
    apply_policy(cp, ns, "throttle-dry", {**throttling(untouched, dry_client), "dryRun": True})
    # Four Local analysis slots (the default is one): a round of runs costs what one does.
    operator = start_operator(bootstrap, EBB_LOCAL_ANALYSIS_RUNS="4")

    # Alert: the consumed cut only, and the Budget condition and an Event say the partition is over.
    alert = run_after(cp, ns, "alert")
    assert alert["status"]["lastRun"]["outcome"] == "Succeeded", alert["status"]
    assert log_start(bootstrap, alerted, 0) == 5
    status, reason, message = _budget(alert)
    assert (status, reason) == ("False", "OverBudget")
    assert "1 partitions over the budget (records younger than 2h)" in message
    assert "action Alert: nothing more deleted" in message
    assert alert["status"]["budget"]["overBudgetPartitions"] == 1
    assert any(alerted in m for m in event(cp, ns, "alert", "OverBudget"))

    with ClusterAdmin(ClusterConnection.of(bootstrap)) as admin:
        # Dry runs say what their action would do, and change nothing: no records gone, no quota.
        dry = run_after(cp, ns, "evict")
        status, reason, message = _budget(dry)
        assert (status, reason) == ("False", "OverBudget")
        would = f"would evict {dead} (22 records): {evicted}-0 < 20: {dead} 15; {evicted}-1 < 12: {dead} 7"
        assert would in message
        assert [log_start(bootstrap, evicted, p) for p in (0, 1)] == [0, 0], "a dry run deleted records"
        assert any(would in m for m in event(cp, ns, "evict", "BudgetDryRun"))
        dry_throttle = run_after(cp, ns, "throttle-dry")
        status, reason, message = _budget(dry_throttle)
        assert (status, reason) == ("False", "OverBudget")
        assert f"would throttle [{dry_writer}] to 1.0 MiB/s" in message
        assert not dry_throttle["status"]["budget"].get("throttled")
        assert log_start(bootstrap, untouched, 0) == 0, "a dry run deleted records"

        # ThrottleProducers: the quota is set while the partition is over budget.
        on = run_after(cp, ns, "throttle")
        assert _budget(on)[:2] == ("False", "Throttled"), on["status"]
        assert [(t.get("clientId"), t["producerByteRate"]) for t in on["status"]["budget"]["throttled"]] == [
            (client, RATE)
        ]
        quotas = wait_until(
            "the quota described", admin.client_quotas, 30, until=lambda q: writer in q, interval=0.2
        )
        assert quotas[writer] == {"producer_byte_rate": float(RATE)}
        assert dry_writer not in quotas, "a dry run set a client quota"

        # Second round, side by side: EvictSlowest for real, and the throttled partition cut under budget
        # once the dead group read on.
        commit(bootstrap, dead, [(throttled, 0, 30)])
        patch_policy(cp, ns, "throttle", {"historyLimit": 2})
        patch_policy(cp, ns, "evict", {"dryRun": False})

        # EvictSlowest: as far as the budget needs (20, not the 30 consumedRetention allows), never past
        # the required group (12), and status names the dead group with what it loses unread.
        done = run_after(cp, ns, "evict", run_id(dry))
        assert done["status"]["lastRun"]["outcome"] == "Succeeded", done["status"]
        assert [log_start(bootstrap, evicted, p) for p in (0, 1)] == [20, 12]
        (topic,) = done["status"]["topics"]
        assert [(e["group"], e["partition"], e["records"]) for e in topic["evicted"]] == [
            (dead, 0, 15),
            (dead, 1, 7),
        ]
        assert done["status"]["budget"]["evictedRecords"] == 22
        assert _budget(done)[:2] == ("False", "OverBudget")  # partition 1: the required group holds it
        assert any(f"evicted {dead} (22 records)" in m for m in event(cp, ns, "evict", "Evicted"))
        # The metric counts what the dead group really lost, once the DeleteRecords cut; the Alert policy's
        # gauge says how many partitions are over.
        lost = {"namespace": ns, "policy": "evict", "topic": evicted, "group": dead}
        assert metric_sample(operator, "ebb_operator_budget_evicted_records_total", **lost) == 22
        over = {"namespace": ns, "policy": "alert"}
        assert metric_sample(operator, "ebb_operator_policy_over_budget_partitions", **over) == 1

        # The quota is lifted by the run that brought the partition under budget.
        off = run_after(cp, ns, "throttle", run_id(on))
        assert log_start(bootstrap, throttled, 0) == 30
        assert _budget(off)[:2] == ("True", "WithinBudget"), off["status"]
        assert not off["status"]["budget"].get("throttled")
        wait_until(
            "the quota removed", admin.client_quotas, 30, until=lambda q: writer not in q, interval=0.2
        )
        assert event(cp, ns, "throttle", "ThrottleLifted")
