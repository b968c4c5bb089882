"""CompactionConfig reconciliation: keep compaction settings on every matching topic.

Plan without side effects, apply in one IncrementalAlterConfigs batch (only keys that differ, so a
drifted key is SET back and nothing else is touched), write status once (Strimzi's topic operator).
Nothing is written to Kafka unless the namespace's grant allows Compaction on every matched topic. A
topic matched by two CompactionConfigs on one cluster belongs to the oldest one; the others report
Conflict naming it (Strimzi's ResourceConflict rule). "One cluster" means one cluster id (DescribeCluster),
not one bootstrap string, and an object refused by its grant owns nothing. A setting DescribeConfigs does
not list for a topic is one the cluster lacks (Apache Kafka has no KIP-87 tombstone.null.value.enable): it
is reported as Unsupported, never sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import kube, metrics
from ebb_operator.access import Forbidden
from ebb_operator.handlers import cluster
from ebb_operator.handlers.runtime import Runtime, runtime
from ebb_operator.handlers.status import StatusWriter
from ebb_operator.kafka import ClusterAdmin, ClusterConfigError, TopicConfigs
from ebb_operator.models.common import GROUP, VERSION, ConditionStatus, now_rfc3339
from ebb_operator.models.compaction_config import (
    CRD,
    CompactionConfigSpec,
    CompactionConfigStatus,
    TopicState,
    TopicStatus,
)
from ebb_operator.models.messages import EVENT_MESSAGE, bounded
from ebb_operator.models.reasons import Reason

RESOURCE = kube.Resource.ebb(CRD.plural, CRD.kind)
KIND = CRD.kind
log = logging.getLogger(__name__)
_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


@dataclass(frozen=True)
class Claim:
    """What another CompactionConfig claims: for conflict detection from kopf's in-memory index."""

    owner: str  # namespace/name
    created: str  # creationTimestamp (RFC 3339 sorts as time)
    cluster: str  # the cluster's id once known, else how the object names it
    spec: CompactionConfigSpec
    active: bool = True  # False when its grant refused it: it owns nothing


def same_value(key: str, current: str | None, desired: str) -> bool:
    """Compare as Kafka means them: cleanup.policy is a set, numbers compare numerically."""
    if current is None:
        return False
    if key == "cleanup.policy":
        return set(current.replace(" ", "").split(",")) == set(desired.split(","))
    try:
        return float(current) == float(desired)
    except ValueError:
        return current == desired


def winner(topic: str, me: Claim, claims: list[Claim]) -> Claim:
    """The oldest CompactionConfig on the same cluster matching `topic` (ties broken by name)."""
    rivals = [c for c in claims if c.active and c.cluster == me.cluster and c.spec.topics.matches(topic)]
    return min([me, *rivals], key=lambda c: (c.created, c.owner))


def plan_topic(
    topic: str, desired: dict[str, str], described: TopicConfigs
) -> tuple[dict[str, str], list[str]]:
    """(keys to SET because they differ, keys the cluster lacks) for one topic."""
    unsupported = sorted(k for k in desired if not described.supports(k))
    changes = {
        k: v
        for k, v in desired.items()
        if k not in unsupported and not same_value(k, described.configs[k].value, v)
    }
    return changes, unsupported


def _reference(spec: CompactionConfigSpec, rt: Runtime | None) -> str:
    if spec.cluster is not None:
        servers = spec.cluster.bootstrap_servers or (rt.settings.default_bootstrap_servers if rt else "")
        return f"inline:{servers}"
    if spec.cluster_ref is not None:
        return spec.cluster_ref.name
    return (rt.settings.default_cluster if rt else None) or ""


@kopf.index(GROUP, VERSION, CRD.plural, id="compactionconfig_claims")
def compactionconfig_claims(
    body: kopf.Body, namespace: str | None, name: str, memo: kopf.Memo, **_: Any
) -> dict[str, Claim]:
    """Every CompactionConfig's claim, kept current by kopf's watch (no listing on each reconcile)."""
    try:
        spec = CompactionConfigSpec.model_validate(dict(body.spec))
    except ValidationError:
        return {}
    rt = memo.get("runtime")
    reference = _reference(spec, rt if isinstance(rt, Runtime) else None)
    cluster_key = rt.cluster_ids.get(reference, reference) if isinstance(rt, Runtime) else reference
    conditions: list[dict[str, Any]] = (body.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), {})
    owner = f"{namespace}/{name}"
    created = str(body.metadata.get("creationTimestamp", ""))
    return {owner: Claim(owner, created, cluster_key, spec, ready.get("reason") != "Forbidden")}


# kopf hands each handler its indices as extra keyword arguments (`compactionconfig_claims`), which its
# handler protocols do not declare: mypy cannot match these three handlers, hence the ignores.
@kopf.on.create(GROUP, VERSION, CRD.plural, id="compactionconfig-create")  # type: ignore[arg-type]  # index kwarg
async def compactionconfig_create(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], memo: kopf.Memo, **_: Any
) -> None:
    await _reconcile(runtime(memo), body, compactionconfig_claims)


@kopf.on.update(GROUP, VERSION, CRD.plural, id="compactionconfig-update")  # type: ignore[arg-type]  # index kwarg
async def compactionconfig_update(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], memo: kopf.Memo, **_: Any
) -> None:
    await _reconcile(runtime(memo), body, compactionconfig_claims)


async def compactionconfig_resync(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], memo: kopf.Memo, **_: Any
) -> None:
    """Periodic resync (a timer registered by handlers.register, its interval an operator setting):
    corrects drift and reaches topics created after the last pass."""
    await _reconcile(runtime(memo), body, compactionconfig_claims)


@metrics.reconciles(KIND)
async def _reconcile(rt: Runtime, body: kopf.Body, claims_index: kopf.Index[str, Claim]) -> None:
    async with _locks[str(body.metadata.uid)]:
        out = StatusWriter(
            body, RESOURCE, CompactionConfigStatus.model_validate(dict(body.get("status") or {}))
        )
        try:
            spec = CompactionConfigSpec.model_validate(dict(body.spec))
            target = await cluster.resolve(rt, out.ref.namespace, spec.cluster_ref, spec.cluster)
            metadata = await rt.admins.call(target.connection, lambda a: a.metadata())
            matched = await asyncio.to_thread(spec.topics.select, metadata.topics)
            await asyncio.to_thread(target.access.check_compaction, spec, matched)
            me = Claim(
                f"{out.ref.namespace}/{out.ref.name}",
                str(body.metadata.get("creationTimestamp", "")),
                await cluster.cluster_id(rt, target),
                spec,
            )
        except (ValidationError, Forbidden, ClusterConfigError, cluster.ClusterUnreachable) as exc:
            await out.failed(exc)
            return
        except Exception as exc:
            reason = await out.failed(cluster.ClusterUnreachable(f"cannot reach the cluster: {exc}"))
            raise kopf.TemporaryError(f"{reason}: {exc}", delay=10) from exc
        others = [
            Claim(c.owner, c.created, rt.cluster_ids.get(c.cluster, c.cluster), c.spec, c.active)
            for claims in claims_index.values()
            for c in claims
            if c.owner != me.owner
        ]
        previous = {t.topic: t.state for t in out.status.topics}
        try:
            topics = await rt.admins.call(
                target.connection, lambda a: _apply(a, spec, matched, me, others, previous)
            )
        except Exception as exc:
            message = f"cannot reach the cluster: {exc}"
            await out.write(ConditionStatus.FALSE, Reason.KAFKA_ERROR, message)
            metrics.FAILURES.labels(KIND, Reason.KAFKA_ERROR).inc()
            raise kopf.TemporaryError(message, delay=10) from exc
        for topic in topics:
            if topic.event is not None:
                kopf.info(body, reason=topic.event[0], message=bounded(topic.event[1], EVENT_MESSAGE))
        status = out.status
        status.topics = [t.status for t in topics][:500]
        status.matched_topics = len(topics)
        status.last_sync = now_rfc3339()
        ready, reason, message = _summary(status.topics)
        if ready is not ConditionStatus.TRUE:
            metrics.FAILURES.labels(KIND, reason).inc()
        await out.write(ready, reason, message)


@dataclass(frozen=True)
class Outcome:
    status: TopicStatus
    event: tuple[str, str] | None = None  # (reason, message) of the Event to post


def _apply(
    admin: ClusterAdmin,
    spec: CompactionConfigSpec,
    matched: list[str],
    me: Claim,
    others: list[Claim],
    previous: dict[str, TopicState],
) -> list[Outcome]:
    """Decide ownership, describe, SET what differs (blocking: runs in a worker thread)."""
    result: dict[str, Outcome] = {}
    owned = []
    for topic in matched:
        owner = winner(topic, me, others)
        if owner is me:
            owned.append(topic)
        else:
            conflict = TopicStatus(
                topic=topic, state=TopicState.CONFLICT, message=f"Managed by {owner.owner}"
            )
            result[topic] = Outcome(conflict)
    desired = spec.topic_configs()
    described = admin.topic_configs(owned)
    changes: dict[str, dict[str, str]] = {}
    unsupported: dict[str, list[str]] = {}
    for topic in owned:
        if described[topic].error is not None:
            failed = TopicStatus(topic=topic, state=TopicState.FAILED, message=str(described[topic].error))
            result[topic] = Outcome(failed)
            continue
        changes[topic], unsupported[topic] = plan_topic(topic, desired, described[topic])
    outcomes = admin.set_topic_configs(changes)
    now = now_rfc3339()
    for topic, keys in changes.items():
        failure = outcomes.get(topic)
        if failure is not None:
            result[topic] = Outcome(TopicStatus(topic=topic, state=TopicState.FAILED, message=str(failure)))
            continue
        event = None
        if keys:
            metrics.CONFIGS_APPLIED.labels(KIND).inc(len(keys))
            drift = previous.get(topic) in (TopicState.APPLIED, TopicState.UNSUPPORTED)
            settings = ", ".join(f"{k}={v}" for k, v in sorted(keys.items()))
            event = ("DriftCorrected" if drift else "ConfigsApplied", f"topic {topic}: {settings}")
        if unsupported[topic]:
            status = TopicStatus(
                topic=topic,
                state=TopicState.UNSUPPORTED,
                last_applied=now,
                message=f"the cluster lacks {', '.join(unsupported[topic])}; other settings applied",
            )
        else:
            status = TopicStatus(topic=topic, state=TopicState.APPLIED, last_applied=now)
        result[topic] = Outcome(status, event)
    return [result[t] for t in matched]


def _summary(topics: list[TopicStatus]) -> tuple[ConditionStatus, Reason, str]:
    by_state: defaultdict[TopicState, list[str]] = defaultdict(list)
    for t in topics:
        by_state[t.state].append(t.topic)
    for state, reason in (
        (TopicState.FAILED, Reason.KAFKA_ERROR),
        (TopicState.CONFLICT, Reason.CONFLICT),
        (TopicState.UNSUPPORTED, Reason.UNSUPPORTED),
    ):
        if by_state[state]:
            first = next(t for t in topics if t.state is state)
            return (
                ConditionStatus.FALSE,
                reason,
                f"{len(by_state[state])} of {len(topics)} topics {state.value.lower()}: "
                f"{first.topic}: {first.message}",
            )
    return ConditionStatus.TRUE, Reason.APPLIED, f"configs applied to {len(topics)} topics"
