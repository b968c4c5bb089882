"""The plan the analysis job computes (issue 5) and the operator copies into RetentionPolicy status.

Shared here so the analysis job and the handlers agree on one type without importing each other.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from ebb_operator.models.common import Observed
from ebb_operator.models.unread import MAX_UNREAD_PER_TOPIC, UnreadTotal


class HoldReason(StrEnum):
    """Why a partition keeps its data: anything unknown holds it (docs/analysis.md, the decision)."""

    NO_COMMIT = "NoCommit"  # a counted group has no committed offset for the partition
    OFFSET_OUT_OF_RANGE = "OffsetOutOfRange"  # committed offset outside [logStart, highWatermark]
    LOOKUP_FAILED = "LookupFailed"  # any lookup error (KIP-68's -1)
    REQUIRED_GROUP_MISSING = "RequiredGroupMissing"
    NOT_EXCLUSIVE = "NotExclusive"  # read by a group outside include (KIP-762)
    COMPACT_ONLY = "CompactOnly"  # cleanup.policy lacks delete: reported, not attempted
    NO_COUNTED_CONSUMERS = (
        "NoCountedConsumers"  # no counted group reads the topic: nothing proves consumption
    )
    NOTHING_TO_DELETE = "NothingToDelete"  # already at the cut


class PartitionPlan(Observed):
    topic: str
    partition: int
    log_start_offset: int | None = None
    high_watermark: int | None = None
    delete_before: int | None = Field(default=None, description="New log start offset; None when held.")
    records: int = 0
    bytes: int = 0
    reason: HoldReason | None = None
    blocking_groups: list[str] = Field(default_factory=list, max_length=20)
    blocking_count: int = Field(default=0, description="Groups behind it (blockingGroups lists at most 20).")
    lag_records: int = 0
    lag_bytes: int = 0
    over_budget: bool = Field(default=False, description="Over spec.budget after this cut.")


class UnreadLoss(Observed):
    """Records a group loses unread on a partition when a budget evicts it."""

    group: str = Field(description="The evicted consumer group.")
    records: int = Field(description="Records between its commit and the new log start.")


class Eviction(Observed):
    """A partition cut past counted groups' commits to meet spec.budget (EvictSlowest)."""

    topic: str = Field(description="The topic.")
    partition: int = Field(description="The partition number.")
    offset: int = Field(description="The cut: the partition's new log start offset.")
    groups: list[UnreadLoss] = Field(description="Every group evicted there, with what it loses unread.")


class EvictedGroup(Observed):
    group: str = Field(description="A consumer group the budget evicted.")
    partition: int = Field(description="The partition it was evicted on.")
    records: int = Field(description="Records it loses unread there.")


class LimitingGroup(Observed):
    """A group that limits the cut of some partitions of a topic: the slowest counted reader there, or a
    group that holds a partition whole (no commit, an out-of-range commit, an outsider of an exclusive
    policy); its lag is then everything the partition retains."""

    group: str = Field(description="The consumer group.")
    partitions: int = Field(default=0, description="Partitions of the topic whose cut this group sets.")
    lag_records: int = Field(default=0, description="Records it has not read on those partitions.")
    lag_bytes: int = Field(default=0, description="Estimated bytes of those records: what it holds on disk.")
    pinned_records: int = Field(
        default=0,
        description="Records only this group keeps: where it alone sets the cut or holds the partition, from "
        "its position to where the cut would be had it read everything (0 where groups stand together).",
    )
    pinned_bytes: int = Field(
        default=0, description="Estimated bytes of those records: what this group alone keeps on disk."
    )
    oldest_unread: str | None = Field(
        default=None,
        description="The timestamp of the oldest record it has not read on those partitions (the record at "
        "its position), where the record could be read.",
    )
    oldest_unread_age_seconds: int | None = Field(
        default=None, description="How old that record was when the plan was made, in seconds."
    )


class HeldPartition(Observed):
    partition: int = Field(description="The partition number.")
    reason: HoldReason = Field(description="Why it keeps its data.")
    blocking_groups: list[str] = Field(
        default_factory=list, max_length=20, description="The groups holding it (at most 20)."
    )
    blocking_count: int = Field(default=0, description="Groups behind it (blockingGroups lists at most 20).")


class TopicPlan(Observed):
    topic: str = Field(description="The topic.")
    partitions: int = Field(default=0, description="Its partitions.")
    deletable_records: int = Field(default=0, description="Records the plan deletes.")
    reclaimable_bytes: int = Field(default=0, description="Estimated bytes the plan frees.")
    held: list[HeldPartition] = Field(
        default_factory=list, max_length=100, description="Partitions that keep their data, and why."
    )
    held_count: int = Field(default=0, description="Held partitions of the topic (held lists at most 100).")
    limiting: list[LimitingGroup] = Field(
        default_factory=list, max_length=10, description="The groups limiting the cut, most lag first."
    )
    limiting_count: int = Field(default=0, description="Groups limiting the cut (limiting lists at most 10).")
    # spec.budget (docs/analysis.md, "The budget")
    over_budget: int = Field(default=0, description="Partitions over budget after the plan's cuts.")
    evicted: list[EvictedGroup] = Field(
        default_factory=list,
        max_length=100,
        description="Groups the budget evicted, per partition, with the records each loses unread.",
    )
    evicted_count: int = Field(default=0, description="Evictions of the topic (evicted lists at most 100).")
    unread: list[UnreadTotal] = Field(
        default_factory=list,
        max_length=MAX_UNREAD_PER_TOPIC,
        description="Counted groups whose unread records left the log, most records first.",
    )
    unread_count: int = Field(default=0, description="Groups with unread loss (unread lists at most 10).")


class PlanSummary(Observed):
    topics: int = Field(default=0, description="Topics matched.")
    partitions: int = Field(default=0, description="Their partitions.")
    deletable_records: int = Field(default=0, description="Records the plan deletes.")
    reclaimable_bytes: int = Field(default=0, description="Estimated bytes the plan frees.")
    reclaimable: str | None = Field(
        default=None, description="reclaimableBytes for humans (IEC units: KiB, MiB, GiB, ...)."
    )
    held_partitions: int = Field(default=0, description="Partitions held back (by a group or a rule).")
    over_budget_partitions: int = Field(
        default=0, description="Partitions over spec.budget after the plan's cuts."
    )
    evicted_records: int = Field(
        default=0, description="Records the plan deletes that an evicted group has not read (spec.budget)."
    )

    @model_validator(mode="after")
    def _human(self) -> PlanSummary:
        self.reclaimable = human_bytes(self.reclaimable_bytes)
        return self


def human_bytes(count: int) -> str:
    """1536 -> "1.5 KiB": the unit kubectl users read disk sizes in."""
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            break
        value /= 1024
    return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
