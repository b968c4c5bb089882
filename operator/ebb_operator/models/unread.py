"""Unread loss: records a counted group had not read that left the log, counted once (docs/analysis.md).

No Kafka tool reports this (KIP-490 proposed it and was never adopted). Each run compares every counted
group's commit with its partition's log start: the offsets from the commit up to the log start are gone
before the group read them, whatever removed them (forced or the broker's own retention, a budget's
eviction, a DeleteRecords without guard, kafka-delete-records.sh). The ledger in the policy's status
remembers, per group and partition still behind the log start, the offset up to which its loss is counted,
so a run counts only what left since: once across runs, operator restarts and leader changes.
"""

from __future__ import annotations

from pydantic import Field

from ebb_operator.models.common import Observed

MAX_ACCOUNTS = 500  # (topic, group) entries in the ledger
MAX_MARKS = 5_000  # partitions the ledger marks, over all entries
MAX_UNREAD_PER_TOPIC = 10


class UnreadTotal(Observed):
    """What a group lost unread on one topic: status topics[].unread[]."""

    group: str = Field(description="The counted consumer group.")
    records: int = Field(
        default=0, description="Records it had not read that left the log, counted since `since`."
    )
    since: str = Field(description="When loss was first counted for it on this topic.")
    last_counted: str = Field(description="When loss was last counted for it on this topic.")


class UnreadAccount(UnreadTotal):
    """One (topic, group) of the ledger: its count, and per partition where its commit is still below the
    log start, the offset up to which that partition's loss is counted (the log start the last run saw)."""

    topic: str = Field(description="The topic.")
    partitions: list[int] = Field(
        default_factory=list, description="Partitions where its commit is below the log start."
    )
    counted_to: list[int] = Field(
        default_factory=list, description="Per partition listed, the offset up to which loss is counted."
    )


class UnreadCounted(Observed):
    """Loss one run counted for the first time: what the counter and the Event add."""

    topic: str
    group: str
    records: int
    partitions: list[int] = Field(default_factory=list)
