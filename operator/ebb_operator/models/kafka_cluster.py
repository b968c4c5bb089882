"""KafkaCluster (`kc`): the admin-owned registry of the clusters the operator may act on, and who may.

Cluster-scoped and writable by cluster admins only (the chart's `ebb-edit` role does not include it).
Tenant objects name an entry with `spec.clusterRef.name`; the entry's credentials live in a Secret in the
operator's own namespace, named here, never by tenants. `spec.access` grants namespaces the topics they
may act on and the dangerous options they may use; everything else is refused (docs/operator.md,
"Tenancy").
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ebb_operator.models.common import (
    BOOTSTRAP_PATTERN,
    Duration,
    Model,
    Observed,
    Regex,
    SecretRef,
    Status,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, condition_columns, ready_column

NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class Permission(StrEnum):
    """The options that can delete data no consumer has read, or act beyond retention."""

    GUARD_NONE = "GuardNone"  # DeleteRecords with guard None (no consumer check)
    FORCED_RETENTION = "ForcedRetention"  # RetentionPolicy.forcedRetention (retention.ms), >= the minimum
    COMPACTION = "Compaction"  # CompactionConfig (cleanup.policy compact rewrites topics)
    SPARK_OVERRIDES = "SparkOverrides"  # a SparkApplication service account of the tenant's choice
    BUDGET = "Budget"  # RetentionPolicy.budget (Alert, and with the permissions below its other actions)
    EVICT = "Evict"  # budget action EvictSlowest: deletes records counted groups have not read


class LabelSelector(Model):
    match_labels: dict[str, str] = Field(
        default_factory=dict, description="Namespaces carrying every one of these labels."
    )


class Grant(Model):
    model_config = validated(
        {
            "rule": "size(self.namespaces) > 0 || has(self.namespaceSelector)",
            "message": "a grant names namespaces or a namespaceSelector",
        }
    )

    namespaces: list[str] = Field(
        default_factory=list,
        max_length=256,
        description="Namespaces this grant admits, by name.",
        json_schema_extra={"items": {"type": "string", "pattern": NAMESPACE_PATTERN, "maxLength": 63}},
    )
    namespace_selector: LabelSelector | None = Field(
        default=None, description="Namespaces this grant admits, by label."
    )
    topics: list[Regex] = Field(
        min_length=1, max_length=64, description="Topics these namespaces may act on (RE2, whole names)."
    )
    groups: list[Regex] | None = Field(
        default=None,
        max_length=64,
        description="Consumer groups these namespaces may leave out of a RetentionPolicy (exclude, "
        "outside include, inactive); every other group reading their topics always counts. "
        "Absent: any group.",
    )
    allow: list[Permission] = Field(
        default_factory=list,
        max_length=8,
        description="Options these namespaces may use: GuardNone (DeleteRecords without the consumer "
        "check), ForcedRetention (at least forcedRetentionMinimum), Compaction (CompactionConfig), "
        "SparkOverrides (a SparkApplication image or service account of their choice), Budget (a "
        "RetentionPolicy budget), Evict (its action EvictSlowest).",
    )
    throttle_client_ids: list[Regex] = Field(
        default_factory=list,
        max_length=64,
        description="Client ids (RE2, whole names) whose produce rate a RetentionPolicy budget of these "
        "namespaces may limit with a Kafka client quota (action ThrottleProducers). Absent: none.",
    )
    throttle_users: list[Regex] = Field(
        default_factory=list,
        max_length=64,
        description="Users (principal names, RE2, whole names) whose produce rate a RetentionPolicy budget "
        "of these namespaces may limit with a Kafka client quota (action ThrottleProducers). Absent: none.",
    )
    forced_retention_minimum: Duration = Field(
        default="1d", description="With ForcedRetention: the shortest forcedRetention allowed."
    )


class Credentials(Model):
    secret_ref: SecretRef = Field(
        description="A Secret in the operator's namespace with the client properties (sasl.*, ssl.*.pem)."
    )


class KafkaClusterSpec(Model):
    bootstrap_servers: str = Field(pattern=BOOTSTRAP_PATTERN, description="host:port[,host:port...]")
    credentials: Credentials | None = Field(
        default=None, description="How the operator authenticates (absent: no client properties)."
    )
    analysis_credentials: Credentials | None = Field(
        default=None,
        description="A read-only credential for RetentionPolicy analysis runs (DESCRIBE on topics, "
        "groups and the cluster, DESCRIBE_CONFIGS on topics; READ on __consumer_offsets for "
        "offsetsSource ConsumerOffsetsTopic): every run on this cluster gets it instead of "
        "credentials, and runs with a tenant's serviceAccount need it.",
    )
    access: list[Grant] = Field(
        default_factory=list,
        max_length=64,
        description="Grants: which namespaces may act on which topics, with which options. A namespace no "
        "grant admits may do nothing here.",
    )


class Usage(Observed):
    namespace: str = Field(description="A namespace whose objects name this KafkaCluster.")
    objects: int = Field(default=0, description="How many of its objects do.")


class KafkaClusterStatus(Status):
    cluster_id: str | None = Field(
        default=None, description="The id DescribeCluster answered: the cluster's identity."
    )
    brokers: int | None = Field(default=None, description="Brokers the cluster's metadata lists.")
    used_by: list[Usage] = Field(
        default_factory=list, max_length=256, description="The namespaces whose objects name it."
    )
    last_checked: str | None = Field(default=None, description="When the cluster was last described.")


CRD = CrdInfo(
    kind="KafkaCluster",
    plural="kafkaclusters",
    short_names=("kc",),
    spec=KafkaClusterSpec,
    status=KafkaClusterStatus,
    scope="Cluster",
    categories=("ebb-admin",),
    columns=(
        PrinterColumn("Bootstrap", "string", ".spec.bootstrapServers"),
        PrinterColumn("Cluster ID", "string", ".status.clusterId"),
        ready_column(),
        age_column(),
        *condition_columns(),
    ),
)
