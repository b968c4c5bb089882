"""spec.budget in a run: the Budget condition, its Events and metrics, and ThrottleProducers' client quotas.

The analysis decides what a budget cuts (analysis/decide.py: over budget, evictions); the operator reports
it and, for ThrottleProducers, sets and lifts Kafka client quotas (KIP-546 AlterClientQuotas, KIP-13's
`producer_byte_rate`). Kafka cannot say who produces to a topic, and a quota cannot be scoped to one, so
the quota goes on the producers the budget names (client ids or users the namespace's grant lets it
throttle), limiting what they produce to every topic, while any of the policy's partitions is over
budget.

Ebb removes only quotas it set: each is recorded in status (`status.budget.throttled`) before it is sent,
so an operator killed in between finds its record, and is removed only while the cluster still has
exactly the value Ebb set (a quota changed since is someone else's, and stays). A producer that already
has a quota Ebb did not set keeps it. Every run lifts what the policy no longer asks for (the budget is met,
its action or producers changed); the policy's runner, stopped by its deletion, lifts the rest
(handlers/retention_policy.py). No finalizer holds a policy for that (handlers/lifetime.py): one deleted
while no operator runs leaves its quotas, named in its last status, for an admin to remove.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import kopf

from ebb_operator import metrics
from ebb_operator.handlers import cluster
from ebb_operator.handlers.cluster import Target
from ebb_operator.handlers.runtime import Runtime
from ebb_operator.handlers.status import StatusWriter
from ebb_operator.kafka import ClusterAdmin, KafkaCallError, KafkaFailure, QuotaEntity
from ebb_operator.models.common import ConditionStatus, now_rfc3339, parse_quantity, set_condition
from ebb_operator.models.delete_records import DeleteRecordsStatus
from ebb_operator.models.messages import EVENT_MESSAGE, bounded
from ebb_operator.models.plan import human_bytes
from ebb_operator.models.reasons import Reason
from ebb_operator.models.retention_policy import (
    Budget,
    BudgetAction,
    BudgetStatus,
    Producer,
    RetentionPolicySpec,
    RetentionPolicyStatus,
    ThrottledProducer,
)
from ebb_operator.models.run import RunPlan

PRODUCER_BYTE_RATE = "producer_byte_rate"  # KIP-13: bytes per second a client may produce to one broker
CONDITION = "Budget"


def entity(p: Producer | ThrottledProducer) -> QuotaEntity:
    """The quota entity of a producer: its user, its client id, or the two together."""
    if p.user is not None and p.client_id is not None:
        return QuotaEntity.of(user=p.user, client_id=p.client_id)
    if p.user is not None:
        return QuotaEntity.of(user=p.user)
    return QuotaEntity.of(client_id=p.client_id)


def record(e: QuotaEntity, rate: int, since: str | None) -> ThrottledProducer:
    names = dict(e.parts)
    return ThrottledProducer(
        user=names.get("user"), client_id=names.get("client-id"), producer_byte_rate=rate, since=since
    )


def wanted_quotas(budget: Budget | None, over_budget: bool) -> dict[QuotaEntity, int]:
    """The quotas the policy asks for now: its producers at its rate, while something is over budget."""
    if budget is None or budget.throttle is None or not over_budget:
        return {}
    rate = parse_quantity(budget.throttle.producer_byte_rate)
    return {entity(p): rate for p in budget.throttle.producers}


@dataclass
class QuotaPlan:
    """What to change in the cluster's client quotas, from what the policy wants, what Ebb recorded setting,
    and what the cluster has (DescribeClientQuotas)."""

    set: dict[QuotaEntity, int] = field(default_factory=dict)  # new, or Ebb's own at another rate
    remove: list[QuotaEntity] = field(default_factory=list)  # Ebb's own, no longer wanted
    keep: dict[QuotaEntity, ThrottledProducer] = field(default_factory=dict)  # Ebb's own, wanted as they are
    foreign: list[QuotaEntity] = field(default_factory=list)  # wanted, but someone else's quota is there
    forgotten: list[QuotaEntity] = field(default_factory=list)  # Ebb's record, changed since by someone

    @property
    def changes(self) -> dict[QuotaEntity, dict[str, float | None]]:
        """The AlterClientQuotas of the plan (None removes the key, KIP-546)."""
        out: dict[QuotaEntity, dict[str, float | None]] = {
            e: {PRODUCER_BYTE_RATE: float(r)} for e, r in self.set.items()
        }
        out.update({e: {PRODUCER_BYTE_RATE: None} for e in self.remove})
        return out


def plan_quotas(
    wanted: Mapping[QuotaEntity, int],
    recorded: Iterable[ThrottledProducer],
    current: Mapping[QuotaEntity, Mapping[str, float]],
) -> QuotaPlan:
    """Ebb's quota is the one its record names with the value the cluster still has, or a record whose quota
    is not there (set and lost, or never sent): only those are Ebb's to change or remove."""
    plan = QuotaPlan()
    mine = {entity(r): r for r in recorded}
    for e, r in mine.items():
        now = current.get(e, {}).get(PRODUCER_BYTE_RATE)
        ours = now is None or now == r.producer_byte_rate
        if not ours:
            plan.forgotten.append(e)
        elif e not in wanted:
            if now is not None:
                plan.remove.append(e)
        elif now is None or wanted[e] != r.producer_byte_rate:
            plan.set[e] = wanted[e]
        else:
            plan.keep[e] = r
    for e, rate in wanted.items():
        if e in mine and e not in plan.forgotten:
            continue
        if PRODUCER_BYTE_RATE in current.get(e, {}):
            plan.foreign.append(e)  # an admin's (or another policy's) quota: never overridden
        else:
            plan.set[e] = rate
    return plan


@dataclass
class QuotaOutcome:
    throttled: list[ThrottledProducer]  # what status records after the change
    failed: dict[QuotaEntity, KafkaFailure]


def intended(plan: QuotaPlan, recorded: Iterable[ThrottledProducer]) -> list[ThrottledProducer]:
    """What status records before the plan is sent: every quota Ebb will have set (the sets at their new
    rate, `since` kept where it had one) and every one it removes, until the removal is confirmed."""
    before = {entity(r): r for r in recorded}
    out = [*plan.keep.values(), *(before[e] for e in plan.remove)]
    out += [
        record(e, rate, before[e].since if e in before else now_rfc3339()) for e, rate in plan.set.items()
    ]
    return sorted(out, key=entity)


def apply_quotas(admin: ClusterAdmin, plan: QuotaPlan, recorded: Iterable[ThrottledProducer]) -> QuotaOutcome:
    """Send the plan's AlterClientQuotas (blocking: a worker thread); what status records after it."""
    return settle(plan, recorded, admin.alter_client_quotas(plan.changes) if plan.changes else {})


def settle(
    plan: QuotaPlan, recorded: Iterable[ThrottledProducer], results: Mapping[QuotaEntity, KafkaFailure | None]
) -> QuotaOutcome:
    """What status records after AlterClientQuotas answered `results`. A removal that failed stays
    recorded, so the next run tries again; a quota that failed to be set stays recorded too (the next run
    finds it absent and sets it: a record is Ebb's claim on a quota that is either Ebb's or absent, never
    someone else's)."""
    failed = {e: f for e, f in results.items() if f is not None}
    removed = {e for e in plan.remove if e not in failed}
    return QuotaOutcome([r for r in intended(plan, recorded) if entity(r) not in removed], failed)


def describe_entities(entities: Iterable[QuotaEntity]) -> str:
    return ", ".join(f"[{e}]" for e in entities)


# -- the Budget condition ----------------------------------------------------------------------------


class Event(NamedTuple):
    reason: str
    message: str
    warning: bool = True


@dataclass(frozen=True)
class BudgetReport:
    """The Budget condition of a run, and the Events it is worth."""

    status: ConditionStatus
    reason: Reason
    message: str
    events: tuple[Event, ...] = ()


def over_budget_topics(plan: RunPlan) -> str:
    over = [(t.topic, t.over_budget) for t in plan.topics if t.over_budget]
    shown = ", ".join(f"{topic}: {n}" for topic, n in over[:10])
    more = f", and {len(over) - 10} more topics" if len(over) > 10 else ""
    return f"{shown}{more}"


def evictions(plan: RunPlan) -> str:
    """The evicted groups per partition, with what each loses unread (for an Event: its limit cuts it)."""
    parts = [
        f"{e.topic}-{e.partition} < {e.offset}: " + ", ".join(f"{g.group} {g.records}" for g in e.groups)
        for e in plan.evictions
    ]
    return "; ".join(parts)


def evicted_groups(plan: RunPlan) -> Counter[str]:
    """Records each evicted group loses unread, over the plan's partitions."""
    out: Counter[str] = Counter()
    for e in plan.evictions:
        for g in e.groups:
            out[g.group] += g.records
    return out


def report(
    budget: Budget,
    plan: RunPlan,
    *,
    dry_run: bool,
    throttled: Sequence[ThrottledProducer] = (),
    note: str = "",
) -> BudgetReport:
    """The Budget condition: True (WithinBudget) only when every partition is within budget by consumed
    retention alone; False with reason OverBudget while some partition is still over it after the run's cut
    (Alert, an eviction stopped short by a required group or consumedRetention, a held partition,
    ThrottleProducers without its quota in place, or a dry run), Throttled while Ebb's quotas are in place,
    Evicted when evictions brought every partition within it. Every run that evicts posts an Evicted
    Event naming each group and what it loses per partition; every run that finds a partition over budget
    an OverBudget one (a dry run: one BudgetDryRun Event saying what it would do)."""
    over, records = plan.summary.over_budget_partitions, plan.summary.evicted_records
    limit = _limits(budget)
    groups = ", ".join(f"{g} ({n} records)" for g, n in sorted(evicted_groups(plan).items()))
    then = f"; {note}" if note else ""
    if not over and not plan.evictions:
        return BudgetReport(ConditionStatus.TRUE, Reason.WITHIN_BUDGET, f"within {limit}{then}")
    where = f"{over} partitions over {limit} after the cut ({over_budget_topics(plan)})"
    evicted = f"evicted {groups}: {evictions(plan)}"
    if dry_run:
        parts = [f"dry run: {where}" if over else f"dry run: over {limit}"]
        parts += [f"would evict {groups}: {evictions(plan)}"] if plan.evictions else []
        message = "; ".join(parts) + then
        return BudgetReport(
            ConditionStatus.FALSE, Reason.OVER_BUDGET, message, (Event("BudgetDryRun", message, False),)
        )
    events = (Event("Evicted", f"{evicted} ({records} records unread)"),) if plan.evictions else ()
    if not over:
        message = f"within {limit} after it {evicted}"
        return BudgetReport(ConditionStatus.FALSE, Reason.EVICTED, message, events)
    if budget.action is BudgetAction.ALERT:
        message = f"{where}; action Alert: nothing more deleted"
        return BudgetReport(
            ConditionStatus.FALSE, Reason.OVER_BUDGET, message, (Event("OverBudget", message),)
        )
    if budget.action is BudgetAction.THROTTLE_PRODUCERS and throttled:
        who = describe_entities(entity(t) for t in throttled)
        message = f"{where}; producers throttled: {who}{then}"
        return BudgetReport(ConditionStatus.FALSE, Reason.THROTTLED, message)
    message = f"{where}{f'; {evicted}' if plan.evictions else ''}{then}"
    return BudgetReport(
        ConditionStatus.FALSE, Reason.OVER_BUDGET, message, (*events, Event("OverBudget", message))
    )


def _limits(budget: Budget) -> str:
    parts = []
    if budget.max_bytes_per_partition:
        parts.append(f"{human_bytes(parse_quantity(budget.max_bytes_per_partition))} per partition")
    if budget.max_age:
        parts.append(f"records younger than {budget.max_age}")
    return "the budget (" + " and ".join(parts) + ")"


def event_message(text: str) -> str:
    return bounded(text, EVENT_MESSAGE)


# -- a policy's budget in a run ----------------------------------------------------------------------


def _rate(rate: int) -> str:
    return f"{human_bytes(rate)}/s"


def quota_note(plan: QuotaPlan, *, dry_run: bool) -> str:
    """What the quota plan does (or, in a dry run, would do), in a line."""
    would = "would " if dry_run else ""
    parts = []
    if plan.set:
        rates = sorted(set(plan.set.values()))
        parts.append(
            f"{would}throttle {describe_entities(sorted(plan.set))} to {', '.join(_rate(r) for r in rates)}"
        )
    if plan.remove:
        parts.append(f"{would}lift the quota on {describe_entities(plan.remove)}")
    if plan.foreign:
        parts.append(f"left alone: {describe_entities(plan.foreign)} (a quota Ebb did not set)")
    if plan.forgotten:
        parts.append(f"no longer Ebb's: {describe_entities(plan.forgotten)} (its quota was changed since)")
    return "; ".join(parts)


class PolicyBudget:
    """One policy's budget across a run: the runner hands it the plan, the cluster and, after the delete,
    the DeleteRecords' outcome. It writes status.budget and the Budget condition into the runner's status
    (the runner's writer sends them), and sends its own Events."""

    def __init__(self, rt: Runtime, out: StatusWriter[RetentionPolicyStatus]) -> None:
        self.rt, self.out = rt, out
        self.namespace, self.name = out.ref.namespace, out.ref.name

    @property
    def status(self) -> RetentionPolicyStatus:
        return self.out.status

    @property
    def recorded(self) -> list[ThrottledProducer]:
        return list(self.status.budget.throttled) if self.status.budget is not None else []

    async def after_plan(self, spec: RetentionPolicySpec, plan: RunPlan, target: Target) -> str:
        """Report the plan's budget and set or lift quotas; the note for the run's message ("" without a
        budget)."""
        budget = spec.budget
        wanted = wanted_quotas(budget, plan.summary.over_budget_partitions > 0)
        throttled, note = self.recorded, ""
        if wanted or throttled:
            try:
                throttled, note = await self._quotas(target, wanted, dry_run=spec.dry_run)
            except KafkaCallError as exc:  # the run's consumed cut goes on; the Budget condition says why
                note = f"cannot throttle: DescribeClientQuotas (KIP-546) failed: {exc}"
        labels = (self.namespace, self.name)
        metrics.POLICY_THROTTLED_PRODUCERS.labels(*labels).set(len(throttled))
        if budget is None:
            self.status.budget = BudgetStatus(throttled=throttled) if throttled else None
            self.status.conditions = [c for c in self.status.conditions if c.type != CONDITION]
            with contextlib.suppress(KeyError):
                metrics.POLICY_OVER_BUDGET_PARTITIONS.remove(*labels)
            return note
        summary = plan.summary
        self.status.budget = BudgetStatus(
            over_budget_partitions=summary.over_budget_partitions,
            evicted_records=summary.evicted_records,
            throttled=throttled,
        )
        metrics.POLICY_OVER_BUDGET_PARTITIONS.labels(*labels).set(summary.over_budget_partitions)
        said = report(budget, plan, dry_run=spec.dry_run, throttled=throttled, note=note)
        self.status.conditions = set_condition(
            self.status.conditions, CONDITION, said.status, said.reason, said.message, self.out.generation
        )
        for event in said.events:  # once per run that finds it
            post = kopf.warn if event.warning else kopf.info
            post(self.out.body, reason=event.reason, message=event_message(event.message))
        return said.message

    async def _quotas(
        self, target: Target, wanted: Mapping[QuotaEntity, int], *, dry_run: bool
    ) -> tuple[list[ThrottledProducer], str]:
        """Set and lift client quotas toward `wanted`; what status then records, and a note."""
        recorded = self.recorded
        current = await self.rt.admins.call(target.connection, lambda a: a.client_quotas())
        plan = plan_quotas(wanted, recorded, current)
        note = quota_note(plan, dry_run=dry_run)
        if dry_run:
            return recorded, note
        if not plan.changes:
            return intended(plan, recorded), note
        # Recorded before it is sent: an operator killed in between finds the claim, and the quota, Ebb's.
        self.status.budget = (self.status.budget or BudgetStatus()).model_copy(
            update={"throttled": intended(plan, recorded)}
        )
        await self.out.write(ConditionStatus.UNKNOWN, Reason.RUNNING, f"client quotas: {note}")
        outcome = await self.rt.admins.call(target.connection, lambda a: apply_quotas(a, plan, recorded))
        if outcome.failed:
            failures = "; ".join(f"[{e}]: {f}" for e, f in sorted(outcome.failed.items()))
            note = f"{note}; AlterClientQuotas failed for {failures}"
        if plan.set:
            kopf.warn(self.out.body, reason="ProducersThrottled", message=event_message(note))
        elif plan.remove:
            kopf.info(self.out.body, reason="ThrottleLifted", message=event_message(note))
        return outcome.throttled, note

    async def lift(self, target: Target) -> str:
        """Remove every quota Ebb set for the policy (its grant no longer allows the budget, or it is
        deleted); what stays recorded is what could not be removed."""
        if not self.recorded:
            return ""
        throttled, note = await self._quotas(target, {}, dry_run=False)
        if self.status.budget is not None:
            self.status.budget.throttled = throttled
        metrics.POLICY_THROTTLED_PRODUCERS.labels(self.namespace, self.name).set(len(throttled))
        return note

    def count_evicted(self, plan: RunPlan, done: DeleteRecordsStatus) -> None:
        """The evicted records of the partitions the run's DeleteRecords really cut, into the counter."""
        for (topic, group), records in evicted_records(plan, done).items():
            metrics.BUDGET_EVICTED_RECORDS.labels(self.namespace, self.name, topic, group).inc(records)


def evicted_records(plan: RunPlan, done: DeleteRecordsStatus) -> Counter[tuple[str, str]]:
    """Records each evicted group lost unread per topic, on the partitions whose low watermark the run's
    DeleteRecords really brought to the eviction's cut (a partition refused or failed lost nothing)."""
    cut = {(r.topic, r.partition): r.low_watermark for r in done.partitions if r.low_watermark is not None}
    out: Counter[tuple[str, str]] = Counter()
    for e in plan.evictions:
        reached = cut.get((e.topic, e.partition))
        if reached is not None and reached >= e.offset:
            for g in e.groups:
                out[e.topic, g.group] += g.records
    return out


async def lift_quotas(
    rt: Runtime, namespace: str, name: str, spec: RetentionPolicySpec, status: RetentionPolicyStatus
) -> list[ThrottledProducer]:
    """The deleted policy's quotas lifted (its runner stopping for the deletion); what could not be removed.
    Raises when the cluster cannot be reached."""
    recorded = list(status.budget.throttled) if status.budget is not None else []
    if not recorded:
        return []
    target = await cluster.resolve(rt, namespace, spec.cluster_ref, spec.cluster, undoing=True)
    current = await rt.admins.call(target.connection, lambda a: a.client_quotas())
    plan = plan_quotas({}, recorded, current)
    outcome = await rt.admins.call(target.connection, lambda a: apply_quotas(a, plan, recorded))
    with contextlib.suppress(KeyError):
        metrics.POLICY_THROTTLED_PRODUCERS.remove(namespace, name)
    return outcome.throttled
