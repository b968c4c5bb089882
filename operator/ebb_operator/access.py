"""What a namespace may do on a cluster: the KafkaCluster grants that admit it, and the checks every
tenant object passes before anything is sent to Kafka.

Pure decisions over the models (no Kubernetes, no Kafka), so every rule is unit-tested on its own. A
refusal names the rule it broke; the handlers turn it into `Ready=False`, reason `Forbidden`, and an
Event. Several grants admitting one namespace add up (the union of their topics, groups and options;
the smallest forcedRetention minimum among the grants that allow ForcedRetention).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ebb_operator.models.common import duration_ms, full_match
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import DeleteRecordsSpec, Guard
from ebb_operator.models.kafka_cluster import Grant, KafkaClusterSpec, Permission
from ebb_operator.models.retention_policy import Engine, RetentionPolicySpec


class Forbidden(Exception):
    """An object asks for more than its namespace's grant allows; the message names the rule."""


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

    def require(self, permission: Permission, what: str) -> None:
        if not self.unrestricted and permission not in self.allow:
            raise Forbidden(
                f"{what} needs {permission.value} in the grant of {self._where()} (spec.access[].allow)"
            )

    def check_topics(self, topics: Iterable[str], field: str) -> None:
        """Refuse when any of `topics` is outside the grant (how many, not which: they may be another
        tenant's)."""
        outside = sorted({t for t in topics if not self.permits_topic(t)})
        if outside:
            raise Forbidden(
                f"{field} reaches {len(outside)} topic(s) outside the topics granted to {self._where()} "
                f"({', '.join(self.topics) or 'none'})"
            )

    def check_delete_records(self, spec: DeleteRecordsSpec) -> None:
        if spec.guard is Guard.NONE:
            self.require(Permission.GUARD_NONE, "guard None")
        self.check_topics((p.topic for p in spec.partitions), "spec.partitions")

    def check_compaction(self, spec: CompactionConfigSpec, matched: Iterable[str]) -> None:
        self.require(Permission.COMPACTION, "a CompactionConfig")
        self.check_topics(matched, "spec.topics")

    def check_retention_policy(self, spec: RetentionPolicySpec, matched: Iterable[str]) -> None:
        if spec.forced_retention is not None:
            self.require(Permission.FORCED_RETENTION, "forcedRetention")
            minimum = self.forced_retention_minimum_ms
            if not self.unrestricted and minimum is not None and duration_ms(spec.forced_retention) < minimum:
                raise Forbidden(
                    f"forcedRetention {spec.forced_retention} is shorter than the {minimum // 1000}s "
                    f"forcedRetentionMinimum of {self._where()}"
                )
        app = spec.analysis.spark_application
        if spec.analysis.engine is Engine.SPARK_APPLICATION and app is not None:
            self.check_spark_overrides(app.image, app.service_account)
        self.check_topics(matched, "spec.topics")

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


def access_for(name: str, spec: KafkaClusterSpec, namespace: str, labels: Mapping[str, str]) -> Access:
    """The namespace's access to KafkaCluster `name`; Forbidden when no grant admits it."""
    grants = [g for g in spec.access if grant_admits(g, namespace, labels)]
    if not grants:
        raise Forbidden(f"namespace {namespace} has no grant on KafkaCluster {name} (spec.access)")
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
    )
