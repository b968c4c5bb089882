"""What a namespace may do on a cluster: the KafkaCluster grants that admit it, and the checks every
tenant object passes before anything is sent to Kafka.

Pure decisions over the models (no Kubernetes, no Kafka), so every rule is unit-tested on its own. The
admission webhook and the reconcilers call the same checks, so `kubectl apply` and the Ready condition
never disagree: the webhook with what a spec says (options, the topics it names), a reconciler also with
the topics a spec's patterns match on the cluster now. A refusal is one line naming the field, its value
and the rule; the webhook refuses the request with it, a reconciler writes `Ready=False`, reason
`Forbidden`, and an Event. It names topics the tenant wrote, never topics a pattern reached (they may be
another tenant's). Several grants admitting one namespace add up (the union of their topics, groups and
options; the smallest forcedRetention minimum among the grants that allow ForcedRetention).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ebb_operator.models.common import TOPIC_NAME_PATTERN, TopicSelector, duration_ms, full_match
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import DeleteRecordsSpec, Guard
from ebb_operator.models.kafka_cluster import Grant, KafkaClusterSpec, Permission
from ebb_operator.models.retention_policy import Budget, BudgetAction, Engine, RetentionPolicySpec


class Forbidden(Exception):
    """An object asks for more than its namespace's grant allows; the message names the rule."""


# Regex syntax besides `.`: a pattern without any names the one topic it spells (`.` matching itself).
_SYNTAX = frozenset("\\^$|?*+()[]{}")
_TOPIC_NAME = re.compile(TOPIC_NAME_PATTERN)


def named_topic(pattern: str) -> str | None:
    """The topic a pattern spells out ("orders.eu", "orders\\.eu"), or None for a real pattern."""
    text = pattern.replace("\\.", ".")
    if _SYNTAX.intersection(text) or not _TOPIC_NAME.match(text):
        return None
    return text


@dataclass(frozen=True)
class Access:
    """The union of the grants of one KafkaCluster that admit one namespace."""

    cluster: str  # the KafkaCluster's name, or "inline" for spec.cluster
    namespace: str
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None  # None: the namespace may leave any group out of a policy
    allow: frozenset[Permission] = frozenset()
    forced_retention_minimum_ms: int | None = None
    unrestricted: bool = False  # an inline cluster, allowed only on single-team installs
    analysis_credentials: bool = False  # the KafkaCluster names a read-only credential for analysis runs
    throttle_client_ids: tuple[str, ...] = ()  # client ids a budget may throttle (ThrottleProducers)
    throttle_users: tuple[str, ...] = ()  # users a budget may throttle

    @classmethod
    def inline(cls, namespace: str) -> Access:
        return cls("inline", namespace, unrestricted=True)

    def _where(self) -> str:
        return f"namespace {self.namespace} on KafkaCluster {self.cluster}"

    def permits_topic(self, topic: str) -> bool:
        return self.unrestricted or any(full_match(p, topic) for p in self.topics)

    def may_discount(self, group: str) -> bool:
        """May a policy of this namespace leave `group` out (exclude it, ignore it as inactive)?"""
        return self.unrestricted or self.groups is None or any(full_match(p, group) for p in self.groups)

    def _granted(self) -> str:
        patterns = ", ".join(self.topics) or "none"
        return f"the topics granted to {self._where()} ({patterns}; spec.access[].topics)"

    def require(self, permission: Permission, what: str) -> None:
        if not self.unrestricted and permission not in self.allow:
            raise Forbidden(
                f"{what} needs {permission.value} in the grant of {self._where()} (spec.access[].allow)"
            )

    def check_topics(self, topics: Iterable[str], field: str) -> None:
        """Refuse when any of `topics`, matched by the spec's patterns, is outside the grant: how many, not
        which (they may be another tenant's)."""
        outside = sorted({t for t in topics if not self.permits_topic(t)})
        if outside:
            raise Forbidden(f"{field} reaches {len(outside)} topic(s) outside {self._granted()}")

    def check_named_topics(self, written: Iterable[tuple[str, str]]) -> None:
        """Refuse topics the tenant wrote itself (field, topic), naming them: they are its own words."""
        outside = [(field, topic) for field, topic in written if not self.permits_topic(topic)]
        if outside:
            (field, topic), rest = outside[0], sorted({t for _, t in outside[1:]} - {outside[0][1]})
            more = f" (and {len(rest)} more: {', '.join(rest[:10])})" if rest else ""
            raise Forbidden(f"{field} {topic!r}{more}: outside {self._granted()}")

    def check_selector(self, selector: TopicSelector, field: str) -> None:
        """An include pattern that spells out one topic must name a granted one (refused at apply, before
        the topic exists; a real pattern is checked against the topics it matches)."""
        named = ((f"{field}.include[{i}]", named_topic(p)) for i, p in enumerate(selector.include))
        self.check_named_topics((f, t) for f, t in named if t is not None and selector.matches(t))

    def check_delete_records(self, spec: DeleteRecordsSpec) -> None:
        if spec.guard is Guard.NONE:
            self.require(Permission.GUARD_NONE, "spec.guard 'None'")
        if spec.evicted:  # the guard then lets groups' unread records go: what a budget's Evict allows
            self.require(Permission.EVICT, "spec.evicted")
        self.check_named_topics(
            (f"spec.partitions[{i}].topic", p.topic) for i, p in enumerate(spec.partitions)
        )

    def check_compaction(self, spec: CompactionConfigSpec, matched: Iterable[str] = ()) -> None:
        """`matched`: the cluster's topics spec.topics matches (the admission webhook has none)."""
        self.require(Permission.COMPACTION, "a CompactionConfig")
        self.check_selector(spec.topics, "spec.topics")
        self.check_topics(matched, "spec.topics")

    def check_retention_policy(self, spec: RetentionPolicySpec, matched: Iterable[str] = ()) -> None:
        """`matched`: the cluster's topics spec.topics matches (the admission webhook has none)."""
        if spec.forced_retention is not None:
            self.require(Permission.FORCED_RETENTION, f"spec.forcedRetention {spec.forced_retention!r}")
            minimum = self.forced_retention_minimum_ms
            if not self.unrestricted and minimum is not None and duration_ms(spec.forced_retention) < minimum:
                raise Forbidden(
                    f"spec.forcedRetention {spec.forced_retention!r} is shorter than the {minimum // 1000}s "
                    f"forcedRetentionMinimum of {self._where()} (spec.access[].forcedRetentionMinimum)"
                )
        if spec.budget is not None:
            self.check_budget(spec.budget)
        app = spec.analysis.spark_application
        if spec.analysis.engine is Engine.SPARK_APPLICATION and app is not None:
            self.check_spark_overrides(app.image, app.service_account)
        self.check_selector(spec.topics, "spec.topics")
        self.check_topics(matched, "spec.topics")

    def check_budget(self, budget: Budget) -> None:
        """A budget needs Budget; EvictSlowest deletes what counted groups have not read, so also Evict;
        ThrottleProducers limits clients cluster-wide (Kafka quotas know no topics), so only the client ids
        and users the grant names (throttleClientIds, throttleUsers) may be throttled."""
        self.require(Permission.BUDGET, "spec.budget")
        if budget.action is BudgetAction.EVICT_SLOWEST:
            self.require(Permission.EVICT, "spec.budget.action 'EvictSlowest'")
        if budget.throttle is None or self.unrestricted:
            return
        for i, producer in enumerate(budget.throttle.producers):
            field = f"spec.budget.throttle.producers[{i}]"
            for kind, name, patterns, grant_field in (
                ("clientId", producer.client_id, self.throttle_client_ids, "throttleClientIds"),
                ("user", producer.user, self.throttle_users, "throttleUsers"),
            ):
                if name is not None and not any(full_match(p, name) for p in patterns):
                    granted = ", ".join(patterns) or "none"
                    raise Forbidden(
                        f"{field}.{kind} {name!r}: outside the {kind}s {self._where()} may throttle "
                        f"({granted}; spec.access[].{grant_field})"
                    )

    def check_spark_overrides(self, image: str | None, service_account: str | None) -> None:
        """A run's code and identity are the operator's. A tenant's image would run in the jobs namespace
        beside other tenants' runs, where a Spark driver may create pods (and so mount any Secret there)
        and write ConfigMaps (other runs' plans): never. A tenant's service account runs the operator's
        code, but only with the KafkaCluster's read-only analysis credential, never its credentials."""
        if image:
            raise Forbidden(
                "spec.analysis.sparkApplication.image: SparkApplication runs use the operator's image only "
                "(a tenant's image would share the jobs namespace with other tenants' runs); remove it"
            )
        if service_account:
            field = "spec.analysis.sparkApplication.serviceAccount"
            self.require(Permission.SPARK_OVERRIDES, field)
            if not self.unrestricted and not self.analysis_credentials:
                raise Forbidden(
                    f"{field} needs spec.analysisCredentials on KafkaCluster {self.cluster}: a run under "
                    "a tenant's service account gets only the cluster's read-only analysis credential"
                )


def grant_admits(grant: Grant, namespace: str, labels: Mapping[str, str]) -> bool:
    if namespace in grant.namespaces:
        return True
    selector = grant.namespace_selector
    return selector is not None and all(labels.get(k) == v for k, v in selector.match_labels.items())


def access_for(
    name: str, spec: KafkaClusterSpec, namespace: str, labels: Mapping[str, str], field: str = ""
) -> Access:
    """The namespace's access to KafkaCluster `name` (named by `field`, or the operator's default);
    Forbidden when no grant admits it."""
    grants = [g for g in spec.access if grant_admits(g, namespace, labels)]
    if not grants:
        named = f"{field} {name!r}" if field else f"the default KafkaCluster {name!r}"
        raise Forbidden(
            f"{named}: namespace {namespace} has no grant on KafkaCluster {name} (its spec.access)"
        )
    allow = frozenset(p for g in grants for p in g.allow)
    minimums = [
        duration_ms(g.forced_retention_minimum) for g in grants if Permission.FORCED_RETENTION in g.allow
    ]
    groups: tuple[str, ...] | None = None
    if all(g.groups is not None for g in grants):
        groups = tuple(dict.fromkeys(p for g in grants for p in g.groups or ()))
    return Access(
        cluster=name,
        namespace=namespace,
        topics=tuple(dict.fromkeys(p for g in grants for p in g.topics)),
        groups=groups,
        allow=allow,
        forced_retention_minimum_ms=min(minimums) if minimums else None,
        analysis_credentials=spec.analysis_credentials is not None,
        throttle_client_ids=tuple(dict.fromkeys(p for g in grants for p in g.throttle_client_ids)),
        throttle_users=tuple(dict.fromkeys(p for g in grants for p in g.throttle_users)),
    )
