"""CompactionConfig reconciliation: keep compaction settings on every matching topic.

Plan without side effects, apply in one IncrementalAlterConfigs batch (only keys that differ, so a
drifted key is SET back and nothing else is touched), write status once (Strimzi's topic operator).
A topic matched by two CompactionConfigs on one cluster belongs to the oldest one; the others
report Conflict naming it (Strimzi's ResourceConflict rule). A setting DescribeConfigs does not
list for a topic is one the cluster lacks (Apache Kafka has no KIP-87 tombstone.null.value.enable):
it is reported as Unsupported, never sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import metrics
from ebb_operator.handlers import kube
from ebb_operator.handlers.cluster import cluster_key, connection_for
from ebb_operator.handlers.settings import RESYNC_SECONDS
from ebb_operator.kafka import ClusterAdmin, ClusterConfigError, TopicConfigs
from ebb_operator.models.common import GROUP, VERSION, ConditionStatus, now_rfc3339, set_condition
from ebb_operator.models.compaction_config import (
    CRD,
    CompactionConfigSpec,
    CompactionConfigStatus,
    TopicState,
    TopicStatus,
)

KIND = CRD.kind
log = logging.getLogger(__name__)
_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


@dataclass(frozen=True)
class Claim:
    """What another CompactionConfig claims: for conflict detection from kopf's in-memory index."""

    owner: str  # namespace/name
    created: str  # creationTimestamp (RFC 3339 sorts as time)
    cluster: str
    spec: CompactionConfigSpec


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
    rivals = [c for c in claims if c.cluster == me.cluster and c.spec.topics.matches(topic)]
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


@kopf.index(GROUP, VERSION, CRD.plural, id="compactionconfig_claims")
def compactionconfig_claims(body: kopf.Body, namespace: str | None, name: str, **_: Any) -> dict[str, Claim]:
    """Every CompactionConfig's claim, kept current by kopf's watch (no listing on each reconcile)."""
    try:
        spec = CompactionConfigSpec.model_validate(dict(body.spec))
    except ValidationError:
        return {}
    owner = f"{namespace}/{name}"
    return {
        owner: Claim(owner, str(body.metadata.get("creationTimestamp", "")), cluster_key(spec.cluster), spec)
    }


# kopf hands each handler its indices as extra keyword arguments (`compactionconfig_claims`), which its
# handler protocols do not declare: mypy cannot match these three handlers, hence the ignores.
@kopf.on.create(GROUP, VERSION, CRD.plural, id="compactionconfig-create")  # type: ignore[arg-type]  # index kwarg
async def compactionconfig_create(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], **_: Any
) -> None:
    await _reconcile(body, compactionconfig_claims)


@kopf.on.update(GROUP, VERSION, CRD.plural, id="compactionconfig-update")  # type: ignore[arg-type]  # index kwarg
async def compactionconfig_update(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], **_: Any
) -> None:
    await _reconcile(body, compactionconfig_claims)


@kopf.timer(  # type: ignore[arg-type]  # index kwarg
    GROUP,
    VERSION,
    CRD.plural,
    id="compactionconfig-resync",
    interval=RESYNC_SECONDS,
    initial_delay=RESYNC_SECONDS,
)
async def compactionconfig_resync(
    body: kopf.Body, compactionconfig_claims: kopf.Index[str, Claim], **_: Any
) -> None:
    """Periodic resync: corrects drift and reaches topics created after the last pass."""
    await _reconcile(body, compactionconfig_claims)


async def _reconcile(body: kopf.Body, claims_index: kopf.Index[str, Claim]) -> None:
    async with _locks[str(body.metadata.uid)]:
        metrics.RECONCILES.labels(KIND).inc()
        ref = kube.ObjectRef(CRD.plural, body.metadata.namespace or "default", body.metadata.name or "")
        generation = int(body.metadata.get("generation") or 1)
        status = CompactionConfigStatus.model_validate(dict(body.get("status") or {}))
        try:
            spec = CompactionConfigSpec.model_validate(dict(body.spec))
            connection = await connection_for(spec.cluster, ref.namespace)
        except (ValidationError, ClusterConfigError) as exc:
            reason = "InvalidSpec" if isinstance(exc, ValidationError) else "ClusterUnreachable"
            await _write(ref, status, generation, ConditionStatus.FALSE, reason, str(exc))
            metrics.FAILURES.labels(KIND, reason).inc()
            return
        me = Claim(
            f"{ref.namespace}/{ref.name}",
            str(body.metadata.get("creationTimestamp", "")),
            cluster_key(spec.cluster),
            spec,
        )
        others = [c for claims in claims_index.values() for c in claims if c.owner != me.owner]
        previous = {t.topic: t.state for t in status.topics}
        admin = ClusterAdmin(connection)
        try:
            topics = await _apply(body, admin, spec, me, others, previous)
        except Exception as exc:
            message = f"cannot reach the cluster: {exc}"
            await _write(ref, status, generation, ConditionStatus.FALSE, "KafkaError", message)
            metrics.FAILURES.labels(KIND, "KafkaError").inc()
            raise kopf.TemporaryError(message, delay=10) from exc
        finally:
            admin.close()
        status.topics = topics[:500]
        status.matched_topics = len(topics)
        status.last_sync = now_rfc3339()
        ready, reason, message = _summary(topics)
        if ready is not ConditionStatus.TRUE:
            metrics.FAILURES.labels(KIND, reason).inc()
        await _write(ref, status, generation, ready, reason, message)


async def _apply(
    body: kopf.Body,
    admin: ClusterAdmin,
    spec: CompactionConfigSpec,
    me: Claim,
    others: list[Claim],
    previous: dict[str, TopicState],
) -> list[TopicStatus]:
    metadata = await asyncio.to_thread(admin.metadata)
    matched = sorted(t for t in metadata.topics if spec.topics.matches(t))
    result: dict[str, TopicStatus] = {}
    owned = []
    for topic in matched:
        owner = winner(topic, me, others)
        if owner is me:
            owned.append(topic)
        else:
            result[topic] = TopicStatus(
                topic=topic, state=TopicState.CONFLICT, message=f"Managed by {owner.owner}"
            )
    desired = spec.topic_configs()
    described = await asyncio.to_thread(admin.topic_configs, owned)
    changes: dict[str, dict[str, str]] = {}
    unsupported: dict[str, list[str]] = {}
    for topic in owned:
        if described[topic].error is not None:
            result[topic] = TopicStatus(
                topic=topic, state=TopicState.FAILED, message=str(described[topic].error)
            )
            continue
        changes[topic], unsupported[topic] = plan_topic(topic, desired, described[topic])
    outcomes = await asyncio.to_thread(admin.set_topic_configs, changes)
    now = now_rfc3339()
    for topic, keys in changes.items():
        failure = outcomes.get(topic)
        if failure is not None:
            result[topic] = TopicStatus(topic=topic, state=TopicState.FAILED, message=str(failure))
            continue
        if keys:
            metrics.CONFIGS_APPLIED.labels(KIND).inc(len(keys))
            drift = previous.get(topic) in (TopicState.APPLIED, TopicState.UNSUPPORTED)
            settings = ", ".join(f"{k}={v}" for k, v in sorted(keys.items()))
            kopf.info(
                body,
                reason="DriftCorrected" if drift else "ConfigsApplied",
                message=f"topic {topic}: {settings}"[:1024],
            )
        if unsupported[topic]:
            result[topic] = TopicStatus(
                topic=topic,
                state=TopicState.UNSUPPORTED,
                last_applied=now,
                message=f"the cluster lacks {', '.join(unsupported[topic])}; other settings applied",
            )
        else:
            result[topic] = TopicStatus(topic=topic, state=TopicState.APPLIED, last_applied=now)
    return [result[t] for t in matched]


def _summary(topics: list[TopicStatus]) -> tuple[ConditionStatus, str, str]:
    by_state: defaultdict[TopicState, list[str]] = defaultdict(list)
    for t in topics:
        by_state[t.state].append(t.topic)
    for state, reason in (
        (TopicState.FAILED, "KafkaError"),
        (TopicState.CONFLICT, "Conflict"),
        (TopicState.UNSUPPORTED, "Unsupported"),
    ):
        if by_state[state]:
            first = next(t for t in topics if t.state is state)
            return (
                ConditionStatus.FALSE,
                reason,
                f"{len(by_state[state])} of {len(topics)} topics {state.value.lower()}: "
                f"{first.topic}: {first.message}",
            )
    return ConditionStatus.TRUE, "Applied", f"configs applied to {len(topics)} topics"


async def _write(
    ref: kube.ObjectRef,
    status: CompactionConfigStatus,
    generation: int,
    ready: ConditionStatus,
    reason: str,
    message: str,
) -> None:
    status.conditions = set_condition(status.conditions, "Ready", ready, reason, message, generation)
    status.observed_generation = generation
    await asyncio.to_thread(kube.patch_status, ref, status.to_k8s())
