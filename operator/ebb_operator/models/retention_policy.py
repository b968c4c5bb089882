"""RetentionPolicy (`rp`): KIP-68 consumed retention as a policy (reconciled by issue 5's handlers)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from ebb_operator.models.cel import cel_seconds, duration_at_least, duration_minimum
from ebb_operator.models.common import (
    ONE_CLUSTER_RULE,
    ClusterRef,
    Duration,
    GroupSelector,
    KafkaClusterRef,
    Model,
    Observed,
    Quantity,
    Status,
    TopicSelector,
    cel_rules,
    duration_ms,
    parse_duration,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, condition_columns, ready_column
from ebb_operator.models.plan import PlanSummary, TopicPlan
from ebb_operator.models.unread import MAX_ACCOUNTS, UnreadAccount

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


# -- spec.budget (issue 23: Pulsar's backlog quotas for Kafka; docs/analysis.md, "The budget") ---------


class BudgetAction(StrEnum):
    """What a run does with a partition still over budget after the consumed cut."""

    ALERT = "Alert"  # report it (condition Budget, an Event, metrics); delete nothing more
    EVICT_SLOWEST = "EvictSlowest"  # cut past the slowest non-required counted groups, as far as needed
    THROTTLE_PRODUCERS = "ThrottleProducers"  # a producer_byte_rate client quota on the named producers


class Producer(Model):
    """A Kafka client quota entity (KIP-546): a client id, a user (principal name), or both together."""

    model_config = validated(
        {
            "rule": "has(self.user) || has(self.clientId)",
            "message": "a producer names a user, a clientId or both",
        }
    )

    user: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="The user (authenticated principal name) whose connections are throttled.",
    )
    client_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="The client.id whose connections are throttled (with user: that user's client only).",
    )

    @model_validator(mode="after")
    def _named(self) -> Producer:
        if self.user is None and self.client_id is None:
            raise ValueError("a producer names a user, a clientId or both")
        return self


class Throttle(Model):
    producers: list[Producer] = Field(
        min_length=1,
        max_length=64,
        description="The producers to throttle while a topic is over budget: Kafka cannot scope a quota to a "
        "topic, so the quota limits what these clients produce to every topic. Each must be within the "
        "grant's throttleClientIds or throttleUsers.",
    )
    producer_byte_rate: Quantity = Field(
        description="The quota set: bytes per second each of these clients may produce to each broker "
        "(Kafka's producer_byte_rate, KIP-13), e.g. 1Mi."
    )


_BUDGET_AGE_RULE = {
    "rule": f"!has(self.budget) || !has(self.budget.maxAge) || {cel_seconds('budget.maxAge')} >= "
    f"{cel_seconds('consumedRetention')}",
    "message": "budget.maxAge must not be shorter than consumedRetention",
}


class Budget(Model):
    model_config = validated(
        {
            "rule": "has(self.maxBytesPerPartition) || has(self.maxAge)",
            "message": "a budget sets maxBytesPerPartition, maxAge or both",
        },
        {
            "rule": "(self.action == 'ThrottleProducers') == has(self.throttle)",
            "message": "throttle is set exactly when action is ThrottleProducers",
        },
    )

    max_bytes_per_partition: Quantity | None = Field(
        default=None,
        description="The most a partition may keep on each broker's disk, from the cut to its end (the "
        "size DescribeLogDirs reports for its largest replica), e.g. 20Gi.",
    )
    max_age: Duration | None = Field(
        default=None,
        description="The oldest record a partition may keep (its timestamp, as the time index finds it), "
        "e.g. 3d; not shorter than consumedRetention.",
    )
    action: BudgetAction = Field(
        default=BudgetAction.ALERT,
        description="What a run does with a partition still over budget after the consumed cut: Alert "
        "(report it, delete nothing more; needs Budget in the grant), EvictSlowest (cut past the slowest "
        "counted groups that are not required, only as far as the budget needs; also needs Evict), "
        "ThrottleProducers (a client quota on throttle.producers until it is back under budget).",
    )
    throttle: Throttle | None = Field(
        default=None, description="With action ThrottleProducers: whom to throttle, and to what rate."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Budget:
        if self.max_bytes_per_partition is None and self.max_age is None:
            raise ValueError("a budget sets maxBytesPerPartition, maxAge or both")
        if (self.action is BudgetAction.THROTTLE_PRODUCERS) != (self.throttle is not None):
            raise ValueError("throttle is set exactly when action is ThrottleProducers")
        return self


class RetentionPolicySpec(Model):
    model_config = validated(
        # KIP-68: consumed retention is the shorter level, forced retention the backstop.
        duration_at_least(
            "forcedRetention",
            "consumedRetention",
            "forcedRetention must not be shorter than consumedRetention",
        ),
        _BUDGET_AGE_RULE,
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
    budget: Budget | None = Field(
        default=None,
        description="A storage budget per partition (Pulsar's backlog quota): what a run does when a "
        "partition keeps more bytes or older records than this after the consumed cut. Needs Budget in "
        "the grant.",
    )

    @model_validator(mode="after")
    def _budget_age(self) -> RetentionPolicySpec:
        # The budget cannot ask for records younger than consumedRetention allows to go (the CEL rule's twin,
        # for objects that never reach the API server: --policy-file, tests).
        age = self.budget.max_age if self.budget is not None else None
        if age is not None and duration_ms(age) < duration_ms(self.consumed_retention):
            raise ValueError(_BUDGET_AGE_RULE["message"])
        return self


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


class ThrottledProducer(Observed):
    """A client quota Ebb set for the policy's budget: removed when the budget is met, the policy stops
    asking for it or is deleted, and only while the cluster still has exactly this value (a quota someone
    changed since is theirs, and left alone)."""

    user: str | None = Field(default=None, description="The quota entity's user, if any.")
    client_id: str | None = Field(default=None, description="The quota entity's client id, if any.")
    producer_byte_rate: int = Field(description="The producer_byte_rate Ebb set (bytes per second).")
    since: str | None = Field(default=None, description="When Ebb set it.")


class BudgetStatus(Observed):
    over_budget_partitions: int = Field(
        default=0, description="Partitions over budget after the last plan's cuts (evictions included)."
    )
    evicted_records: int = Field(
        default=0,
        description="Records the last plan's evictions delete before an evicted group read them (planned).",
    )
    throttled: list[ThrottledProducer] = Field(
        default_factory=list,
        max_length=64,
        description="The client quotas Ebb has set for this budget (ThrottleProducers) and will remove.",
    )


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
    budget: BudgetStatus | None = Field(
        default=None, description="spec.budget as the last plan found it, and the quotas Ebb set for it."
    )
    unread_ledger: list[UnreadAccount] = Field(
        default_factory=list,
        max_length=MAX_ACCOUNTS,
        description="What unread-loss accounting has counted, per topic and counted group, so that each "
        "record is counted once across runs, restarts and leader changes (at most 500 entries and 5 000 "
        "partitions; topics[].unread shows it).",
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
