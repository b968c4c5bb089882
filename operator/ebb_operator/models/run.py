"""The contract between the operator and the analysis job: what a run gets, and the plan it hands back.

The operator resolves everything a run needs (the policy's spec, the cluster connection with its
credentials, the groups the namespace's grant lets it leave out) and hands it over as a RunRequest file;
the job reads nothing from the Kubernetes API and creates nothing: it answers with a RunPlan, from which
the operator creates the run's DeleteRecords. Shared here so the two never import each other.
"""

from __future__ import annotations

import base64
import gzip

from pydantic import Field

from ebb_operator.models.common import Model, Observed
from ebb_operator.models.delete_records import PartitionOffset
from ebb_operator.models.plan import Eviction, PartitionPlan, PlanSummary, TopicPlan
from ebb_operator.models.retention_policy import RetentionPolicySpec
from ebb_operator.models.unread import UnreadAccount, UnreadCounted


class PolicyRef(Model):
    namespace: str
    name: str
    uid: str | None = None


class RunRequest(Model):
    """One run of a RetentionPolicy's analysis, as the operator hands it to the job."""

    policy: PolicyRef
    spec: RetentionPolicySpec
    run_id: str
    bootstrap_servers: str
    client_properties: dict[str, str] = Field(default_factory=dict)
    # Groups the policy may leave out (the namespace's grant); None: any. Every other group counts.
    discountable_groups: list[str] | None = None
    # group -> when the operator first saw it empty (ms), kept across runs: OffsetFetch carries no commit
    # times, so this is how long an empty group has been inactive.
    empty_since: dict[str, int] = Field(default_factory=dict)
    now_ms: int | None = None
    # What unread-loss accounting has counted (the policy's status.unreadLedger): counted again, never twice.
    unread_ledger: list[UnreadAccount] = Field(default_factory=list)


class RunPlan(Observed):
    """What the job hands back: the plan for the status and the cuts for the DeleteRecords."""

    policy: str
    run_id: str
    dry_run: bool = False
    now_ms: int
    summary: PlanSummary
    topics: list[TopicPlan] = Field(default_factory=list)
    partitions: list[PartitionPlan] = Field(default_factory=list)
    deletes: list[PartitionOffset] = Field(default_factory=list)
    counted_groups: list[str] = Field(default_factory=list)
    evictions: list[Eviction] = Field(
        default_factory=list, description="The cuts of `deletes` spec.budget moved past counted groups."
    )
    deferred_partitions: int = 0
    empty_since: dict[str, int] = Field(default_factory=dict, description="The memory for the next run.")
    unread_ledger: list[UnreadAccount] = Field(default_factory=list, description="The ledger after this run.")
    unread_counted: list[UnreadCounted] = Field(
        default_factory=list, description="Unread loss this run counted for the first time."
    )
    unread_deferred: int = Field(
        default=0,
        description="Partitions whose loss waits for room in the ledger (counted later, never twice).",
    )


# A SparkApplication run hands its plan back in a ConfigMap (the driver's output is out of the operator's
# reach): gzip and base64 under one key, so 10 000 cuts and their topics fit the ConfigMap's 1 MiB.
PLAN_KEY = "plan.json.gz"
# While it runs, the driver keeps its progress (RunProgress: stage, tasksDone, tasksTotal) under this key
# of the same ConfigMap; the operator copies it into the policy's status.lastRun.progress.
PROGRESS_KEY = "progress.json"


def pack_plan(plan: RunPlan) -> str:
    """The plan for the operator (without the per-partition list, which it does not need)."""
    text = plan.model_dump_json(by_alias=True, exclude={"partitions"})
    return base64.b64encode(gzip.compress(text.encode())).decode()


def unpack_plan(text: str) -> bytes:
    return gzip.decompress(base64.b64decode(text))
