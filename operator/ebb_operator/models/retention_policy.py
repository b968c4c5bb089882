"""RetentionPolicy (`rp`): KIP-68 consumed retention as a policy (reconciled by issue 5's handlers)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ebb_operator.models.cel import duration_at_least
from ebb_operator.models.common import (
    ONE_CLUSTER_RULE,
    ClusterRef,
    Duration,
    GroupSelector,
    KafkaClusterRef,
    Model,
    Observed,
    Status,
    TopicSelector,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, ready_column
from ebb_operator.models.plan import PlanSummary, TopicPlan


class Schedule(Model):
    interval: Duration = Field(default="1h", description="Time between analysis runs.")


class Engine(StrEnum):
    LOCAL = "Local"
    SPARK_APPLICATION = "SparkApplication"


class SparkPod(Model):
    cores: int = Field(default=1, ge=1)
    memory: str = Field(default="1g", pattern=r"^[0-9]+[kmgt]?$")
    instances: int | None = Field(default=None, ge=1, description="Executors only.")


class SparkApplicationSpec(Model):
    image: str | None = Field(
        default=None,
        description="Refused: runs share the operator's jobs namespace, where only the operator's own "
        "image runs (a tenant's code there could reach other runs' objects). Leave unset.",
    )
    service_account: str | None = Field(
        default=None,
        description="A ServiceAccount of the operator's jobs namespace for the driver and executors, "
        "instead of the operator's. Needs SparkOverrides in the grant and a KafkaCluster with "
        "analysisCredentials: such a run gets only those.",
    )
    driver: SparkPod | None = None
    executor: SparkPod | None = None


class OffsetsSource(StrEnum):
    ADMIN_API = "AdminAPI"  # OffsetFetch, many groups per request (KIP-709): costs the live commits
    CONSUMER_OFFSETS_TOPIC = "ConsumerOffsetsTopic"  # read __consumer_offsets: costs the size of its log


class Analysis(Model):
    engine: Engine = Field(default=Engine.LOCAL)
    offsets_source: OffsetsSource = Field(
        default=OffsetsSource.ADMIN_API,
        description="Where committed offsets come from: AdminAPI (needs DESCRIBE on groups) or "
        "ConsumerOffsetsTopic (needs READ on __consumer_offsets, which managed services often refuse).",
    )
    spark_application: SparkApplicationSpec | None = None


class RetentionPolicySpec(Model):
    model_config = validated(
        # KIP-68: consumed retention is the shorter level, forced retention the backstop.
        duration_at_least(
            "forcedRetention",
            "consumedRetention",
            "forcedRetention must not be shorter than consumedRetention",
        ),
        ONE_CLUSTER_RULE,
    )

    cluster_ref: KafkaClusterRef | None = None
    cluster: ClusterRef | None = None
    topics: TopicSelector
    consumers: GroupSelector = Field(default_factory=GroupSelector)
    consumed_retention: Duration = Field(
        description="Data must be consumed by every counted group AND older than this."
    )
    forced_retention: Duration | None = Field(default=None, description="Applied as retention.ms.")
    schedule: Schedule = Field(default_factory=Schedule)
    analysis: Analysis = Field(default_factory=Analysis)
    dry_run: bool = False
    suspend: bool = False
    history_limit: int = Field(default=3, ge=0, le=100)


class RunOutcome(StrEnum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"  # the plan's cuts were made (or, in a dry run, reported)
    HELD = "Held"  # nothing deleted: every partition with data to free is held by a group or a rule
    NOTHING_TO_DELETE = "NothingToDelete"  # nothing matched, or every partition is already at its cut
    FAILED = "Failed"


class RunProgress(Observed):
    """Where a SparkApplication run is: the Spark operator's state and the driver's own report."""

    state: str | None = Field(
        default=None, description="The SparkApplication's applicationState (SUBMITTED, RUNNING, ...)."
    )
    executors: int | None = Field(default=None, description="Executor pods running, per the Spark operator.")
    stage: str | None = Field(
        default=None, description="What the analysis job is doing, as its driver reports it."
    )
    tasks_done: int | None = Field(
        default=None, description="Spark tasks finished, over the stages started so far (the driver's)."
    )
    tasks_total: int | None = Field(default=None, description="Spark tasks of the stages started so far.")


class LastRun(Observed):
    id: str
    started_at: str | None = None
    completed_at: str | None = None
    engine: Engine
    spark_application: str | None = None
    spark_application_namespace: str | None = Field(
        default=None,
        description="Where the run's SparkApplication runs: the operator's jobs namespace, not the "
        "policy's (its request holds the cluster's credentials).",
    )
    progress: RunProgress | None = Field(
        default=None, description="A SparkApplication run's progress, updated while it runs."
    )
    delete_records: str | None = None
    outcome: RunOutcome | None = None
    message: str = ""


class RetentionPolicyStatus(Status):
    last_run: LastRun | None = Field(
        default=None, description="The run in progress, or the last one started."
    )
    last_completed_run: LastRun | None = Field(
        default=None, description="The last run that ended: stays while the next one runs."
    )
    failures: int = Field(
        default=0, description="Runs failed in a row (the next try backs off exponentially)."
    )
    plan_run: str | None = Field(
        default=None, description="The run whose plan summary and topics show (the last completed one)."
    )
    summary: PlanSummary | None = None
    topics: list[TopicPlan] = Field(default_factory=list, max_length=100)
    topic_count: int | None = Field(
        default=None, description="Topics in the plan (topics lists at most 100)."
    )


CRD = CrdInfo(
    kind="RetentionPolicy",
    plural="retentionpolicies",
    short_names=("rp",),
    spec=RetentionPolicySpec,
    status=RetentionPolicyStatus,
    columns=(
        PrinterColumn("Topics", "integer", ".status.summary.topics", "Topics matched"),
        PrinterColumn(
            "Reclaimable", "integer", ".status.summary.reclaimableBytes", "Bytes the last plan frees"
        ),
        PrinterColumn("Last Run", "date", ".status.lastRun.completedAt"),
        ready_column(),
        age_column(),
    ),
)
