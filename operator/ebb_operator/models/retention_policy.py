"""RetentionPolicy (`rp`): KIP-68 consumed retention as a policy (reconciled by issue 5's handlers)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field

from ebb_operator.models.cel import duration_at_least, duration_minimum
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
    cel_rules,
    parse_duration,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, condition_columns, ready_column
from ebb_operator.models.plan import PlanSummary, TopicPlan

# The shortest schedule.interval: a run reads every counted group's commits and the partitions' state,
# and a failed run is retried with a backoff capped at the interval, so 0s would run back to back.
MIN_INTERVAL = "1m"
_WHY_MIN_INTERVAL = "the shortest time between runs"


def _at_least_min_interval(text: str) -> str:
    if parse_duration(text) < parse_duration(MIN_INTERVAL):
        raise ValueError(f"shorter than the minimum {MIN_INTERVAL} ({_WHY_MIN_INTERVAL})")
    return text


class Schedule(Model):
    interval: Annotated[Duration, AfterValidator(_at_least_min_interval)] = Field(
        default="1h",
        description=f"Time between analysis runs (at least {MIN_INTERVAL}).",
        json_schema_extra=cel_rules(duration_minimum(MIN_INTERVAL, _WHY_MIN_INTERVAL)),
    )


class Engine(StrEnum):
    LOCAL = "Local"
    SPARK_APPLICATION = "SparkApplication"


class SparkPod(Model):
    cores: int = Field(default=1, ge=1, description="CPU cores.")
    memory: str = Field(default="1g", pattern=r"^[0-9]+[kmgt]?$", description="Memory, as Spark writes it.")
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
    driver: SparkPod | None = Field(default=None, description="The driver pod's resources.")
    executor: SparkPod | None = Field(default=None, description="The executor pods' resources.")


class OffsetsSource(StrEnum):
    ADMIN_API = "AdminAPI"  # OffsetFetch, many groups per request (KIP-709): costs the live commits
    CONSUMER_OFFSETS_TOPIC = "ConsumerOffsetsTopic"  # read __consumer_offsets: costs the size of its log


class Analysis(Model):
    engine: Engine = Field(
        default=Engine.LOCAL,
        description="Local (PySpark local[*] in the operator) or SparkApplication (the Spark operator).",
    )
    offsets_source: OffsetsSource = Field(
        default=OffsetsSource.ADMIN_API,
        description="Where committed offsets come from: AdminAPI (needs DESCRIBE on groups) or "
        "ConsumerOffsetsTopic (needs READ on __consumer_offsets, which managed services often refuse).",
    )
    spark_application: SparkApplicationSpec | None = Field(
        default=None, description="With engine SparkApplication: how the application runs."
    )


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
    schedule: Schedule = Field(default_factory=Schedule, description="When runs happen.")
    analysis: Analysis = Field(default_factory=Analysis, description="How a run's analysis is computed.")
    dry_run: bool = Field(
        default=False, description="Report what runs would delete and set, change nothing anywhere."
    )
    suspend: bool = Field(default=False, description="No runs while true.")
    history_limit: int = Field(
        default=3, ge=0, le=100, description="How many of its finished DeleteRecords the policy keeps."
    )


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
    id: str = Field(description="The run's id (its start time, UTC).")
    started_at: str | None = Field(default=None, description="When the run started.")
    completed_at: str | None = Field(default=None, description="When the run ended.")
    engine: Engine = Field(description="The analysis engine it ran with.")
    spark_application: str | None = Field(default=None, description="Its SparkApplication, if any.")
    spark_application_namespace: str | None = Field(
        default=None,
        description="Where the run's SparkApplication runs: the operator's jobs namespace, not the "
        "policy's (its request holds the cluster's credentials).",
    )
    progress: RunProgress | None = Field(
        default=None, description="A SparkApplication run's progress, updated while it runs."
    )
    delete_records: str | None = Field(default=None, description="The DeleteRecords it created, if any.")
    outcome: RunOutcome | None = Field(
        default=None, description="Running, Succeeded, NothingToDelete, Held or Failed."
    )
    message: str = Field(default="", description="What the run did, or why it failed.")


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
    summary: PlanSummary | None = Field(default=None, description="The plan of planRun, in totals.")
    topics: list[TopicPlan] = Field(
        default_factory=list, max_length=100, description="The plan of planRun, per topic (at most 100)."
    )
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
        PrinterColumn("Reclaimable", "string", ".status.summary.reclaimable", "What the last plan frees"),
        PrinterColumn("Held", "integer", ".status.summary.heldPartitions", "Partitions held back"),
        PrinterColumn("Last Run", "date", ".status.lastRun.completedAt"),
        ready_column(),
        age_column(),
        *condition_columns(),
    ),
)
