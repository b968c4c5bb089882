"""ThrottleProducers' quotas and the Budget condition: Ebb changes only the client quotas it set, and says
what a run found and did."""

from __future__ import annotations

from typing import Any

from ebb_operator.handlers.retention.budget import (
    PRODUCER_BYTE_RATE,
    Event,
    QuotaPlan,
    entity,
    evicted_records,
    intended,
    plan_quotas,
    quota_note,
    report,
    settle,
    wanted_quotas,
)
from ebb_operator.kafka import KafkaFailure, QuotaEntity
from ebb_operator.models.common import ConditionStatus
from ebb_operator.models.delete_records import DeleteRecordsStatus, PartitionResult
from ebb_operator.models.plan import Eviction, PlanSummary, TopicPlan, UnreadLoss
from ebb_operator.models.reasons import Reason
from ebb_operator.models.retention_policy import Budget, ThrottledProducer
from ebb_operator.models.run import RunPlan

WRITER, SVC = QuotaEntity.of(client_id="writer"), QuotaEntity.of(user="svc")
BOTH = QuotaEntity.of(user="svc", client_id="writer")
MiB = 2**20


def mine(entity: QuotaEntity, rate: int) -> ThrottledProducer:
    names = dict(entity.parts)
    return ThrottledProducer(
        user=names.get("user"), client_id=names.get("client-id"), producer_byte_rate=rate, since="t0"
    )


def quota(rate: float) -> dict[str, float]:
    return {PRODUCER_BYTE_RATE: rate}


def throttling(**more: Any) -> Budget:
    return Budget.model_validate(
        {
            "maxBytesPerPartition": "1Mi",
            "action": "ThrottleProducers",
            "throttle": {
                "producers": [{"clientId": "writer"}, {"user": "svc"}, {"user": "svc", "clientId": "writer"}],
                "producerByteRate": "1Mi",
            },
            **more,
        }
    )


def test_the_named_producers_are_wanted_at_the_rate_only_while_something_is_over_budget() -> None:
    assert wanted_quotas(throttling(), over_budget=True) == {WRITER: MiB, SVC: MiB, BOTH: MiB}
    assert wanted_quotas(throttling(), over_budget=False) == {}
    assert wanted_quotas(Budget.model_validate({"maxAge": "1d"}), over_budget=True) == {}
    assert wanted_quotas(None, over_budget=True) == {}


def test_a_new_quota_is_set_and_recorded_before_it_is_sent() -> None:
    plan = plan_quotas({WRITER: MiB}, [], {})
    assert (plan.set, plan.remove, plan.foreign) == ({WRITER: MiB}, [], [])
    assert plan.changes == {WRITER: {PRODUCER_BYTE_RATE: float(MiB)}}
    (claim,) = intended(plan, [])
    assert (claim.client_id, claim.user, claim.producer_byte_rate) == ("writer", None, MiB)


def test_a_quota_ebb_did_not_set_is_never_overridden_nor_removed() -> None:
    # An admin's quota on writer (any value, even Ebb's rate), and none recorded by Ebb.
    plan = plan_quotas({WRITER: MiB}, [], {WRITER: quota(MiB)})
    assert (plan.set, plan.foreign, plan.changes) == ({}, [WRITER], {})
    assert plan_quotas({}, [], {WRITER: quota(5)}).changes == {}
    # Someone changed Ebb's quota since: no longer Ebb's, left as it is and forgotten.
    changed = plan_quotas({}, [mine(WRITER, MiB)], {WRITER: quota(2 * MiB)})
    assert (changed.changes, changed.forgotten, intended(changed, [mine(WRITER, MiB)])) == ({}, [WRITER], [])
    wanted = plan_quotas({WRITER: MiB}, [mine(WRITER, MiB)], {WRITER: quota(2 * MiB)})
    assert (wanted.changes, wanted.forgotten, wanted.foreign) == ({}, [WRITER], [WRITER])


def test_ebbs_own_quota_is_kept_re_rated_or_lifted_when_no_longer_wanted() -> None:
    recorded = [mine(WRITER, MiB), mine(SVC, MiB)]
    current = {WRITER: quota(MiB), SVC: quota(MiB), BOTH: quota(7)}  # BOTH: an admin's
    plan = plan_quotas({WRITER: MiB, SVC: 2 * MiB}, recorded, current)
    assert (list(plan.keep), plan.set, plan.remove) == ([WRITER], {SVC: 2 * MiB}, [])
    lifted = plan_quotas({}, recorded, current)
    assert lifted.changes == {WRITER: {PRODUCER_BYTE_RATE: None}, SVC: {PRODUCER_BYTE_RATE: None}}
    # Until the removal is confirmed, the record stays.
    assert [t.client_id or t.user for t in intended(lifted, recorded)] == ["writer", "svc"]


def test_a_recorded_quota_the_cluster_lacks_is_set_again_or_forgotten() -> None:
    # Recorded before an AlterClientQuotas that never happened (an operator killed in between).
    assert plan_quotas({WRITER: MiB}, [mine(WRITER, MiB)], {}).set == {WRITER: MiB}
    gone = plan_quotas({}, [mine(WRITER, MiB)], {})
    assert (gone.changes, intended(gone, [mine(WRITER, MiB)])) == ({}, [])


def test_the_note_says_what_changes_and_what_is_left_alone() -> None:
    plan = QuotaPlan(set={WRITER: MiB}, remove=[SVC], foreign=[BOTH])
    assert quota_note(plan, dry_run=True) == (
        "would throttle [client-id=writer] to 1.0 MiB/s; would lift the quota on [user=svc]; "
        "left alone: [client-id=writer, user=svc] (a quota Ebb did not set)"
    )


def _plan(over: int = 0, evictions: list[Eviction] | None = None) -> RunPlan:
    evictions = evictions or []
    records = sum(g.records for e in evictions for g in e.groups)
    return RunPlan(
        policy="ns/rp",
        run_id="r1",
        now_ms=0,
        summary=PlanSummary(over_budget_partitions=over, evicted_records=records),
        topics=[TopicPlan(topic="orders", over_budget=over)],
        evictions=evictions,
    )


EVICTION = Eviction(topic="orders", partition=0, offset=75, groups=[UnreadLoss(group="dead", records=65)])


def test_the_budget_condition_says_over_evicted_throttled_or_within() -> None:
    alert = Budget.model_validate({"maxBytesPerPartition": "20Gi"})
    said = report(alert, _plan(over=2), dry_run=False)
    assert (said.status, said.reason) == (ConditionStatus.FALSE, Reason.OVER_BUDGET)
    assert said.message == (
        "2 partitions over the budget (20.0 GiB per partition) after the cut (orders: 2); "
        "action Alert: nothing more deleted"
    )
    assert said.events == (Event("OverBudget", said.message),)
    evict = Budget.model_validate({"maxAge": "3d", "action": "EvictSlowest"})
    said = report(evict, _plan(evictions=[EVICTION]), dry_run=False)
    assert (said.status, said.reason) == (ConditionStatus.FALSE, Reason.EVICTED)
    assert said.message == (
        "within the budget (records younger than 3d) after it evicted dead (65 records): "
        "orders-0 < 75: dead 65"
    )
    assert said.events == (
        Event("Evicted", "evicted dead (65 records): orders-0 < 75: dead 65 (65 records unread)"),
    )
    # An eviction a required group stopped short: both Events, and the condition says it is still over.
    short = report(evict, _plan(over=1, evictions=[EVICTION]), dry_run=False)
    assert (short.reason, [e.reason for e in short.events]) == (Reason.OVER_BUDGET, ["Evicted", "OverBudget"])
    throttled = report(throttling(), _plan(over=1), dry_run=False, throttled=[mine(WRITER, MiB)])
    assert (throttled.reason, throttled.events) == (Reason.THROTTLED, ())
    assert "producers throttled: [client-id=writer]" in throttled.message
    within = report(evict, _plan(), dry_run=False)
    assert (within.status, within.reason, within.events) == (ConditionStatus.TRUE, Reason.WITHIN_BUDGET, ())


def test_a_dry_run_reports_what_the_action_would_do() -> None:
    evict = Budget.model_validate({"maxAge": "3d", "action": "EvictSlowest"})
    said = report(evict, _plan(over=1, evictions=[EVICTION]), dry_run=True)
    assert (said.status, said.reason) == (ConditionStatus.FALSE, Reason.OVER_BUDGET)
    assert said.message == (
        "dry run: 1 partitions over the budget (records younger than 3d) after the cut (orders: 1); "
        "would evict dead (65 records): orders-0 < 75: dead 65"
    )
    assert said.events == (Event("BudgetDryRun", said.message, False),)


def test_what_status_records_after_alter_client_quotas_answered() -> None:
    recorded = [mine(WRITER, MiB), mine(SVC, MiB)]
    plan = QuotaPlan(set={BOTH: MiB}, remove=[WRITER, SVC])
    refused = KafkaFailure("CLUSTER_AUTHORIZATION_FAILED", "", False)
    outcome = settle(plan, recorded, {BOTH: refused, WRITER: None, SVC: refused})
    # writer's removal is confirmed; svc's failed and stays Ebb's claim, as does the refused set on BOTH
    # (the next run finds it absent and sets it again).
    assert sorted(entity(t) for t in outcome.throttled) == sorted([SVC, BOTH])
    assert outcome.failed == {BOTH: refused, SVC: refused}


def test_evicted_records_count_only_where_the_delete_reached_the_cut() -> None:
    second = Eviction(topic="orders", partition=1, offset=40, groups=[UnreadLoss(group="dead", records=30)])
    third = Eviction(topic="orders", partition=2, offset=40, groups=[UnreadLoss(group="slow", records=9)])
    done = DeleteRecordsStatus(
        partitions=[
            PartitionResult(topic="orders", partition=0, requested_offset=75, low_watermark=75),
            PartitionResult(
                topic="orders", partition=1, requested_offset=40, error="GuardRefused", refused=True
            ),
            PartitionResult(topic="orders", partition=2, requested_offset=40, low_watermark=12),
        ]
    )
    assert evicted_records(_plan(evictions=[EVICTION, second, third]), done) == {("orders", "dead"): 65}
