"""What the plan's Spark work (`analysis/plan.py`) computes, written plainly over named commits.

The reference the unit tier feeds `decide` with (its property test draws commits, not aggregates) and the
Spark tier compares Spark's aggregations with: set operations on a few rows, one obvious line per figure,
where Spark's version is shaped for 10 M commits (ids, packed offsets, grouping sets).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ebb_operator.analysis.decide import (
    NOBODY,
    CommitStats,
    GroupCommit,
    GroupRoles,
    Missing,
    Named,
    PartitionFacts,
    PlanResult,
    TopicFacts,
    classify,
    decide,
    matched_topics,
    named,
    summarize,
    with_commit_times,
)
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import Snapshot


class Commit(NamedTuple):
    """A committed offset (plan.OFFSETS_SCHEMA): at most one per group and partition."""

    group: str
    topic: str
    partition: int
    offset: int
    timestamp: int | None = None


@dataclass
class Reference:
    """The facts of every matched partition (in the catalog's order: topic, then partition) and the names
    `decide` may ask for, by index into `partitions`."""

    partitions: list[PartitionFacts]
    counted_readers: list[str]
    roles: GroupRoles
    policy: AnalysisPolicy
    _readers: dict[str, set[str]]  # topic -> its counted readers
    _commits: list[dict[str, int]]  # per partition: counted group -> its commit

    def missing(self, partitions: Sequence[int]) -> dict[int, Missing]:
        out = {}
        for i in partitions:
            absent = self._readers[self.partitions[i].state.topic] - self._commits[i].keys()
            if absent:
                out[i] = Missing(named(absent), named(absent & self.roles.required))
        return out

    def out_of_range(self, partitions: Sequence[int]) -> dict[int, Named]:
        out = {}
        for i in partitions:
            p = self.partitions[i].state
            low, high = p.log_start, p.high_watermark
            stale = [
                g
                for g, o in self._commits[i].items()
                if (low is not None and o < low) or (high is not None and o > high)
            ]
            if stale:
                out[i] = named(stale)
        return out

    def at_minimum(self, minimum: Mapping[int, int]) -> dict[int, Named]:
        out = {}
        for i, m in minimum.items():
            at = [g for g, o in self._commits[i].items() if o == m]
            if at:
                out[i] = named(at)
        return out

    def below(self, limits: Mapping[int, int]) -> dict[int, list[GroupCommit]]:
        out = {}
        for i, limit in limits.items():
            found = [
                GroupCommit(g, o, g in self.roles.required) for g, o in self._commits[i].items() if o < limit
            ]
            if found:
                out[i] = sorted(found)
        return out

    def above(self, minimum: Mapping[int, int]) -> dict[int, int]:
        out = {}
        for i, m in minimum.items():
            higher = [o for o in self._commits[i].values() if o > m]
            if higher:
                out[i] = min(higher)
        return out

    def plan(self) -> PlanResult:
        decisions = decide(
            self.partitions,
            self,
            exclusive=self.policy.exclusive,
            failed_groups=self.roles.failed,
            budget=self.policy.budget,
        )
        return summarize(decisions, self.counted_readers)


def last_commit_times(commits: Iterable[Commit]) -> dict[str, int | None]:
    """Every committing group's latest commit time (None where the source has none)."""
    last: dict[str, int | None] = {}
    for c in commits:
        seen = last.get(c.group)
        last[c.group] = seen if c.timestamp is None else max(c.timestamp, seen or c.timestamp)
    return last


def reference(
    snapshot: Snapshot, policy: AnalysisPolicy, now_ms: int, commits: Iterable[Commit]
) -> Reference:
    commits = list(commits)
    groups = with_commit_times(snapshot.groups, last_commit_times(commits))
    topics = sorted(matched_topics(snapshot.topics, policy), key=lambda t: t.topic)
    roles = classify(groups, policy, now_ms, [t.topic for t in topics])
    counted = set(roles.counted)
    outside = set(roles.outside) if policy.exclusive else set()
    names = {t.topic for t in topics}
    listed = sorted(
        (p for p in snapshot.partitions if p.topic in names), key=lambda p: (p.topic, p.partition)
    )
    index = {(p.topic, p.partition): i for i, p in enumerate(listed)}

    on_partition: list[dict[str, int]] = [{} for _ in listed]
    committing: dict[str, set[str]] = defaultdict(set)  # topic -> counted groups committing on it
    committing_outside: dict[str, set[str]] = defaultdict(set)
    grown: set[str] = set()
    for c in commits:
        if c.topic not in names:
            continue
        if c.group in counted:
            committing[c.topic].add(c.group)
            i = index.get((c.topic, c.partition))
            if i is None:
                grown.add(c.topic)
            else:
                on_partition[i][c.group] = c.offset
        elif c.group in outside:
            committing_outside[c.topic].add(c.group)

    readers = {t: committing[t] | roles.expected.get(t, set()) for t in names}
    facts = {
        t.topic: TopicFacts(
            t,
            len(readers[t.topic]),
            named(committing_outside[t.topic] | roles.subscribed_outsiders.get(t.topic, set()))
            if policy.exclusive
            else NOBODY,
            t.topic in grown,
        )
        for t in topics
    }
    partitions = []
    for p, found in zip(listed, on_partition, strict=True):
        stats = CommitStats()
        if found:
            low = min(found.values())
            at_low = [g for g, o in found.items() if o == low]
            alone = at_low[0] if len(at_low) == 1 else None
            stats = CommitStats(len(found), low, max(found.values()), alone)
        partitions.append(PartitionFacts(p, facts[p.topic], stats))
    guard = set().union(*committing.values(), *roles.expected.values())
    return Reference(partitions, sorted(guard), roles, policy, readers, on_partition)
