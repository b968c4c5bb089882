"""The retention decision: which records of each partition may go, and why the others stay.

Pure: no Spark, no Kafka. `plan.py` reduces the commits (10 M on a large cluster) to the few figures per
partition and topic below; every rule that decides what is deleted lives here, so each is tested on small
typed inputs (docs/analysis.md, "How it computes the plan", lists them).

KIP-68's consumed retention: a partition's cut = min(committed offset of every counted group, the offset at
`now - consumedRetention`), capped by the high watermark. Every rule fails closed: when the plan cannot
prove that every counted group has read a record, the partition is held and the hold names its reason
and the groups behind it.

The steps, in order:
1. `classify`: which groups count (include, exclude, required, the grant's groups, inactiveAfter).
2. The holds, in order of precedence (`decide`); the groups behind a hold are asked of `GroupNames` only
   for the partitions that hold concerns (reading them costs a pass over the commits).
3. The consumed cut of every partition not held (`consumed_cut`): a `Cut` with what limits it.
4. The budget (`spec.budget`, `apply_budget`): a partition still over budget after its cut is reported, or
   with EvictSlowest cut further past the commits of counted groups that are not required, only as far as
   the budget needs (`budget_offset`, `evict`), never past a required group's commit, the offset at
   `now - consumedRetention` or the high watermark.
5. The decision (`PartitionDecision`), then `summarize`: the plan in the shared models.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple, Protocol

from ebb_operator.analysis.policy import AnalysisPolicy, BudgetRule
from ebb_operator.analysis.snapshot import GroupState, PartitionState, TopicState
from ebb_operator.models.common import full_match, rfc3339
from ebb_operator.models.delete_records import PartitionOffset
from ebb_operator.models.plan import (
    EvictedGroup,
    Eviction,
    HeldPartition,
    HoldReason,
    LimitingGroup,
    PartitionPlan,
    PlanSummary,
    TopicPlan,
    UnreadLoss,
)
from ebb_operator.models.retention_policy import BudgetAction

MAX_NAMED = 20  # groups named per partition; the count says how many there are
MAX_LIMITING_PER_TOPIC = 10
MAX_EVICTED_PER_TOPIC = 100  # status topics[].evicted: the Event and the run's plan list every one


class PartitionStatus(StrEnum):
    DELETABLE = "Deletable"  # records below delete_before can go: in the DeleteRecords object
    UP_TO_DATE = "UpToDate"  # nothing to delete now (the cut is at or below the log start offset)
    HELD = "Held"  # a safety rule holds the partition; the reason and the blocking groups say which
    NOT_DELETABLE = "NotDeletable"  # cleanup.policy lacks delete: reported, never attempted (KIP-107)


class LimitedBy(StrEnum):
    """What sets the cut of a partition that is not held."""

    CONSUMER_POSITION = "ConsumerPosition"  # the slowest counted groups: named in the decision
    CONSUMED_RETENTION = "ConsumedRetention"  # records from the cut on are younger than consumedRetention
    BUDGET = "Budget"  # spec.budget (EvictSlowest) moved the cut past counted groups' commits, to its target


class Named(NamedTuple):
    """Groups named for a partition: how many there are, and the first MAX_NAMED in name order."""

    total: int
    names: tuple[str, ...]


NOBODY = Named(0, ())


def named(groups: Iterable[str]) -> Named:
    """Every group of `groups` counted, the first MAX_NAMED named (in name order)."""
    ordered = sorted(set(groups))
    return Named(len(ordered), tuple(ordered[:MAX_NAMED]))


# -- 1. the groups -----------------------------------------------------------------------------------


def _any(patterns: Iterable[str], name: str) -> bool:
    return any(full_match(p, name) for p in patterns)


def matched_topics(topics: Iterable[TopicState], policy: AnalysisPolicy) -> list[TopicState]:
    """Topics the policy selects (RE2 full match, as the operator matches); internal topics never."""
    return [
        t
        for t in topics
        if not t.topic.startswith("__")
        and _any(policy.topics_include, t.topic)
        and not _any(policy.topics_exclude, t.topic)
    ]


def with_commit_times(
    groups: Sequence[GroupState], last_commit: Mapping[str, int | None]
) -> list[GroupState]:
    """The snapshot's groups with the time of their latest commit, where the offsets source has commit
    times (`__consumer_offsets`), plus the groups seen only in commits: they count like any other."""
    out = [g._replace(last_commit=last_commit.get(g.group)) for g in groups]
    described = {g.group for g in groups}
    out += [
        GroupState(n, None, None, (), None, None, t)
        for n, t in sorted(last_commit.items())
        if n not in described
    ]
    return out


@dataclass(frozen=True)
class GroupRoles:
    """How the policy sees each group (README, RetentionPolicy; docs/glossary.md, counted group)."""

    counted: list[str]  # in include (or required, or outside the namespace's grant) and not inactive
    outside: list[str]  # active, outside include: what `exclusive` refuses
    required: frozenset[str]
    failed: list[str]  # counted groups whose description failed: their topics are unknown
    expected: dict[str, set[str]]  # topic -> counted groups that read it without a commit being needed
    #   (assigned or subscribed members; required groups read every matched topic)
    subscribed_outsiders: dict[str, set[str]]  # topic -> groups outside include assigned/subscribed to it


def classify(
    groups: Iterable[GroupState], policy: AnalysisPolicy, now_ms: int, topics: Iterable[str]
) -> GroupRoles:
    known = {g.group: g for g in groups}
    for name in policy.required:
        # A required group counts before it has ever shown up: its absence is exactly what must hold deletes.
        known.setdefault(name, GroupState(name, None, None, (), None, None))
    matched = set(topics)
    cutoff = None if policy.inactive_after_ms is None else now_ms - policy.inactive_after_ms
    counted, outside, failed = [], [], []
    expected: dict[str, set[str]] = {t: set(policy.required) for t in matched}
    subscribed_outsiders: dict[str, set[str]] = {}
    for name in sorted(known):
        g = known[name]
        required = name in policy.required
        # A group outside the namespace's grant (KafkaCluster spec.access[].groups) cannot be left out: it
        # counts as if included, and never expires.
        discountable = policy.discountable_groups is None or _any(policy.discountable_groups, name)
        in_include = (
            required
            or not discountable
            or (_any(policy.groups_include, name) and not _any(policy.groups_exclude, name))
        )
        inactive = False
        if cutoff is not None and not required and discountable and g.error is None and not g.members:
            # Pulsar-style expiry: no members and no commit for inactiveAfter. Where commit times are unknown
            # (the Admin API source: OffsetFetch carries none) the group must have been seen empty for as
            # long (the coordinator's state timestamp, or the operator's memory across runs). A group whose
            # description failed is never called inactive: its members are unknown.
            if g.last_commit is not None:
                inactive = g.last_commit < cutoff
            else:
                inactive = g.empty_since is not None and g.empty_since <= cutoff
        if inactive:
            continue
        reads = matched.intersection(g.topics)
        if in_include:
            counted.append(name)
            if g.error is not None:
                failed.append(name)
            for t in reads:
                expected[t].add(name)
        else:
            outside.append(name)
            for t in reads:
                subscribed_outsiders.setdefault(t, set()).add(name)
    return GroupRoles(counted, outside, frozenset(policy.required), failed, expected, subscribed_outsiders)


# -- what the commits say, per partition and topic ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitStats:
    """The counted groups' commits on one partition."""

    committed: int = 0  # counted groups with a commit on it
    min_committed: int | None = None
    max_committed: int | None = None
    alone_at_minimum: str | None = None  # the one group at the minimum, when it is known to be alone
    #   there without another read of the commits (otherwise `GroupNames.at_minimum` names them)


@dataclass(frozen=True, slots=True)
class TopicFacts:
    """A matched topic as the plan sees it."""

    state: TopicState
    readers: int = 0  # counted groups reading it: by commit, assignment, subscription or `required`
    outsiders: Named = NOBODY  # groups outside include reading it (looked for only when `exclusive`)
    grown: bool = False  # a counted group committed on a partition the snapshot does not list: the
    #   topic grew since the snapshot, and its partitions wait for the next run's


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """Everything the rules know of one partition."""

    state: PartitionState
    topic: TopicFacts
    commits: CommitStats = field(default_factory=CommitStats)


class Missing(NamedTuple):
    """The counted readers of a partition's topic without a commit on the partition."""

    everyone: Named
    required: Named  # of which `required`


class GroupNames(Protocol):
    """The groups behind a hold, asked only for the partitions concerned (by their index in the list
    `decide` was given): naming them is a read of the commits filtered to those partitions."""

    def missing(self, partitions: Sequence[int]) -> Mapping[int, Missing]:
        """The counted readers of each partition's topic without a commit on the partition."""
        ...

    def out_of_range(self, partitions: Sequence[int]) -> Mapping[int, Named]:
        """The counted groups whose commit lies outside [log start, high watermark]."""
        ...

    def at_minimum(self, minimum: Mapping[int, int]) -> Mapping[int, Named]:
        """The counted groups whose commit is the given offset (the partition's minimum)."""
        ...

    def below(self, limits: Mapping[int, int]) -> Mapping[int, Sequence[GroupCommit]]:
        """Every counted group whose commit lies below the given offset (a budget's target), with its
        commit and whether it is required: the groups an eviction may pass."""
        ...

    def above(self, minimum: Mapping[int, int]) -> Mapping[int, int]:
        """The lowest counted commit above the given offset (the partition's minimum), where there is one:
        how far the cut would move without the one group at the minimum (`pin`)."""
        ...


class GroupCommit(NamedTuple):
    group: str
    offset: int
    required: bool = False


# -- 2.-3. the holds and the cut ---------------------------------------------------------------------


class Hold(NamedTuple):
    reason: HoldReason
    groups: Named = NOBODY

    @property
    def status(self) -> PartitionStatus:
        if self.reason is HoldReason.COMPACT_ONLY:
            return PartitionStatus.NOT_DELETABLE
        return PartitionStatus.HELD


class Cut(NamedTuple):
    """Where a partition not held may be cut, and what sets it there."""

    offset: int
    limited_by: LimitedBy
    groups: Named = NOBODY  # the groups at the offset when they set it (LimitedBy.CONSUMER_POSITION)


@dataclass(slots=True, kw_only=True)
class PartitionDecision:
    """One partition of the plan (not frozen: 100 000s are built in a large run, and a frozen dataclass
    is slower to build)."""

    topic: str
    partition: int
    status: PartitionStatus
    reason: HoldReason | None = None
    limited_by: LimitedBy | None = None
    blocking: Named = NOBODY  # the groups behind the hold, or at the cut they limit
    log_start: int | None = None
    high_watermark: int | None = None
    delete_before: int | None = None  # the cut, only when Deletable
    records: int = 0  # records below the cut
    bytes: int = 0  # their estimated bytes
    lag_records: int = 0  # how far the slowest counted group lags the high watermark
    lag_bytes: int = 0
    size_bytes: int | None = None
    budget: BudgetCheck | None = None  # spec.budget after the cut (None: no budget, or not assessed)
    unread_from: int | None = None  # the first record the groups named in `blocking` have not read
    pinned_records: int = 0  # records only the one group named in `blocking` keeps (`pin`)
    pinned_bytes: int = 0
    behind: Sequence[GroupCommit] = ()  # counted commits below the log start (`behind_log_start`)

    @property
    def blocking_groups(self) -> list[str]:
        return list(self.blocking.names)

    @property
    def blocking_count(self) -> int:
        return self.blocking.total


@functools.cache
def deletes(cleanup_policy: str | None) -> bool:
    """Whether `cleanup.policy` includes delete (`compact,delete` does; KIP-107 refuses compact only)."""
    return "delete" in "".join((cleanup_policy or "").lower().split()).split(",")


def _share(size: int | None, records: int, span: int) -> int:
    """Bytes of `records` of a partition: its on-disk size spread evenly over its readable offsets
    (DescribeLogDirs gives no per-offset sizes; compacted gaps and a partly deleted first segment make this
    an estimate)."""
    return size * records // span if size and records > 0 and span > 0 else 0


def standing_hold(facts: PartitionFacts, *, exclusive: bool, failed_groups: Named) -> Hold | None:
    """The holds that need no group names from the commits, in order of precedence."""
    p, t = facts.state, facts.topic
    if t.state.error or p.error or t.grown or None in (p.log_start, p.high_watermark, p.time_offset):
        return Hold(HoldReason.LOOKUP_FAILED)  # KIP-68: any lookup failure skips the partition
    if not deletes(t.state.cleanup_policy):
        return Hold(HoldReason.COMPACT_ONLY)
    if exclusive and t.outsiders.total:
        return Hold(HoldReason.NOT_EXCLUSIVE, t.outsiders)  # KIP-762 refuses a topic others read
    if failed_groups.total:
        return Hold(HoldReason.LOOKUP_FAILED, failed_groups)  # a counted group whose topics are unknown
    return None


def out_of_range(facts: PartitionFacts) -> bool:
    """Some counted commit lies outside [log start, high watermark]: the group's position is unknown to
    the log (a truncated or deleted and recreated topic), so what it has read is unknown."""
    p, s = facts.state, facts.commits
    low, high = s.min_committed, s.max_committed
    return (low is not None and p.log_start is not None and low < p.log_start) or (
        high is not None and p.high_watermark is not None and high > p.high_watermark
    )


def consumed_cut(facts: PartitionFacts) -> Cut:
    """KIP-68's consumed level for a partition no rule holds: every counted group committed on it."""
    p, s = facts.state, facts.commits
    if s.min_committed is None or p.time_offset is None or p.high_watermark is None:
        raise ValueError(f"{p.topic}-{p.partition}: no cut without commits and offsets (it must be held)")
    cut = min(s.min_committed, p.time_offset, p.high_watermark)
    if s.min_committed < p.time_offset:
        alone = s.alone_at_minimum
        return Cut(cut, LimitedBy.CONSUMER_POSITION, Named(1, (alone,)) if alone is not None else NOBODY)
    return Cut(cut, LimitedBy.CONSUMED_RETENTION)


def decide(
    partitions: Sequence[PartitionFacts],
    names: GroupNames,
    *,
    exclusive: bool = False,
    failed_groups: Sequence[str] = (),
    budget: BudgetRule | None = None,
) -> list[PartitionDecision]:
    """The decision for every partition; `failed_groups`: counted groups whose description failed;
    `budget`: the policy's spec.budget."""
    failed = named(failed_groups)
    holds: dict[int, Hold] = {}
    for i, f in enumerate(partitions):
        if (hold := standing_hold(f, exclusive=exclusive, failed_groups=failed)) is not None:
            holds[i] = hold
    # A partition with fewer counted commits than its topic has counted readers: some reader has none.
    lacking = [
        i for i, f in enumerate(partitions) if i not in holds and f.commits.committed < f.topic.readers
    ]
    found = names.missing(lacking) if lacking else {}
    for i in lacking:
        everyone, required = found.get(i, Missing(NOBODY, NOBODY))
        holds[i] = (
            Hold(HoldReason.REQUIRED_GROUP_MISSING, required)
            if required.total
            else Hold(HoldReason.NO_COMMIT, everyone)
        )
    stale = [i for i, f in enumerate(partitions) if i not in holds and out_of_range(f)]
    found_stale = names.out_of_range(stale) if stale else {}
    for i in stale:
        holds[i] = Hold(HoldReason.OFFSET_OUT_OF_RANGE, found_stale.get(i, NOBODY))
    for i, f in enumerate(partitions):
        if i not in holds and f.topic.readers == 0:
            holds[i] = Hold(HoldReason.NO_COUNTED_CONSUMERS)  # nothing proves the records were read

    cuts = {i: consumed_cut(f) for i, f in enumerate(partitions) if i not in holds}
    unnamed = {
        i: c.offset
        for i, c in cuts.items()
        if c.limited_by is LimitedBy.CONSUMER_POSITION and not c.groups.total
    }
    if unnamed:
        at_minimum = names.at_minimum(unnamed)
        for i in unnamed:
            cuts[i] = cuts[i]._replace(groups=at_minimum.get(i, NOBODY))
    outcomes: dict[int, Hold | Cut] = {**holds, **cuts}
    checks = apply_budget(partitions, outcomes, names, budget) if budget is not None else {}
    decisions = [_decision(f, outcomes[i], checks.get(i)) for i, f in enumerate(partitions)]
    pin(partitions, decisions, names)
    behind_log_start(partitions, decisions, names)
    return decisions


# -- 4. the budget -----------------------------------------------------------------------------------


class BudgetState(StrEnum):
    WITHIN = "Within"  # the partition keeps no more than the budget from its cut on
    OVER = "Over"  # it keeps more: reported (Alert, ThrottleProducers), or an eviction stopped short
    UNKNOWN = "Unknown"  # a figure the budget needs was not reported (DescribeLogDirs, ListOffsets)


class BudgetCheck(NamedTuple):
    """A partition against spec.budget, after its cut (an eviction's, where one moved it)."""

    state: BudgetState
    offset: int | None = None  # the lowest cut within the budget (`budget_offset`)
    evicted: tuple[GroupLoss, ...] = ()  # every group the cut passed, with what it loses unread


class GroupLoss(NamedTuple):
    group: str
    records: int


def budget_offset(p: PartitionState, budget: BudgetRule) -> int | None:
    """The lowest cut that keeps the partition within `budget`, or None when a figure it needs is unknown.

    Age: the first offset whose timestamp is at or after `now - maxAge` (ListOffsets by timestamp, KIP-79:
    the time index), so the record at the cut is younger than maxAge. Bytes: Kafka reports a partition's
    size, not where in its log the bytes lie (DescribeLogDirs), so the size of its largest replica is spread
    evenly over its readable offsets, and the cut keeps the most offsets whose share fits
    maxBytesPerPartition. The brokers then free whole segments: the disk keeps the cut's segment too, at
    most one segment over the budget (docs/analysis.md, "The budget")."""
    start, hw = p.log_start, p.high_watermark
    if start is None or hw is None:
        return None
    target = start
    if budget.max_age_ms is not None:
        if p.age_offset is None:
            return None
        target = max(target, p.age_offset)
    if budget.max_bytes is not None:
        size = p.replica_bytes if p.replica_bytes is not None else p.size_bytes
        if size is None:
            return None
        span = hw - start
        if size > budget.max_bytes and span > 0:
            # offsets o..hw fit when size * (hw - o) <= max_bytes * span: keep that many, exactly
            target = max(target, hw - budget.max_bytes * span // size)
    return min(target, hw)


def evict(facts: PartitionFacts, cut: int, target: int, below: Sequence[GroupCommit]) -> Cut | None:
    """EvictSlowest: the cut moved from `cut` toward `target` past the commits of counted groups that are
    not required (`below`: every counted group committed below `target`), only as far as `target`, and
    never past a required group's commit, the offset at `now - consumedRetention` or the high watermark.
    None when none of these lets it move at all."""
    p = facts.state
    if p.time_offset is None or p.high_watermark is None:
        raise ValueError(f"{p.topic}-{p.partition}: no eviction without offsets (it must be held)")
    required = [c.offset for c in below if c.required]
    stop = min(target, p.time_offset, p.high_watermark, *required)
    if stop <= cut:
        return None
    if stop == target:
        return Cut(stop, LimitedBy.BUDGET)
    if required and stop == min(required):
        return Cut(
            stop,
            LimitedBy.CONSUMER_POSITION,
            named(c.group for c in below if c.required and c.offset == stop),
        )
    return Cut(stop, LimitedBy.CONSUMED_RETENTION)


def losses(start: int, cut: int, below: Sequence[GroupCommit]) -> tuple[GroupLoss, ...]:
    """What each group committed below `cut` loses unread when the log starts there (records below the
    current log start are gone already), in name order."""
    return tuple(
        GroupLoss(c.group, cut - max(c.offset, start))
        for c in sorted(below)
        if c.offset < cut and cut > start
    )


def evictable(facts: PartitionFacts, outcome: Hold | Cut) -> bool:
    """May EvictSlowest move this partition's cut? A cut, yes; a hold only for groups committed below the
    log start (retention or an eviction passed them: they are the slowest, not unknown). Every other hold
    stays: an unknown holds, whatever the budget."""
    if isinstance(outcome, Cut):
        return True
    s, p = facts.commits, facts.state
    return (
        outcome.reason is HoldReason.OFFSET_OUT_OF_RANGE
        and s.max_committed is not None
        and p.high_watermark is not None
        and s.max_committed <= p.high_watermark
    )


def apply_budget(
    partitions: Sequence[PartitionFacts],
    outcomes: dict[int, Hold | Cut],
    names: GroupNames,
    budget: BudgetRule,
) -> dict[int, BudgetCheck]:
    """Every partition that deletes (cleanup.policy) checked against the budget after its cut (a hold's
    is its log start); with EvictSlowest the over-budget ones `evictable` get the eviction's cut in
    `outcomes`. The groups below a target are read only for those."""
    checks: dict[int, BudgetCheck] = {}
    targets: dict[int, int] = {}
    for i, f in enumerate(partitions):
        outcome = outcomes[i]
        if isinstance(outcome, Hold) and outcome.reason is HoldReason.COMPACT_ONLY:
            continue
        target = budget_offset(f.state, budget)
        start = f.state.log_start
        if target is None or start is None:
            checks[i] = BudgetCheck(BudgetState.UNKNOWN)
            continue
        cut = max(start, outcome.offset) if isinstance(outcome, Cut) else start
        if cut >= target:
            checks[i] = BudgetCheck(BudgetState.WITHIN, target)
            continue
        checks[i] = BudgetCheck(BudgetState.OVER, target)
        if budget.action is BudgetAction.EVICT_SLOWEST and evictable(f, outcome):
            targets[i] = target
    found = names.below(targets) if targets else {}
    for i, target in targets.items():
        f, below = partitions[i], found.get(i, ())
        start = f.state.log_start
        assert start is not None
        outcome = outcomes[i]
        cut = max(start, outcome.offset) if isinstance(outcome, Cut) else start
        moved = evict(f, cut, target, below)
        if moved is None:
            continue
        outcomes[i] = moved
        state = BudgetState.WITHIN if moved.offset >= target else BudgetState.OVER
        checks[i] = BudgetCheck(state, target, losses(start, moved.offset, below))
    return checks


# -- 5. the decision ---------------------------------------------------------------------------------


def _decision(
    facts: PartitionFacts, outcome: Hold | Cut, budget: BudgetCheck | None = None
) -> PartitionDecision:
    p, s = facts.state, facts.commits
    start, hw = p.log_start, p.high_watermark
    span = (hw - start) if hw is not None and start is not None else 0
    # How far the slowest counted group lags the high watermark (a commit below the log start has every
    # record yet to read): what it holds on disk.
    lag = 0
    if hw is not None and start is not None and s.min_committed is not None:
        lag = max(0, hw - max(s.min_committed, start))
    limited_by, cut, records = None, None, 0
    if isinstance(outcome, Hold):
        status, reason = outcome.status, outcome.reason
    elif start is None or outcome.offset <= start:
        status, reason, limited_by = (
            PartitionStatus.UP_TO_DATE,
            HoldReason.NOTHING_TO_DELETE,
            outcome.limited_by,
        )
    else:
        status, reason, limited_by = PartitionStatus.DELETABLE, None, outcome.limited_by
        cut, records = outcome.offset, outcome.offset - start
    return PartitionDecision(
        topic=p.topic,
        partition=p.partition,
        status=status,
        reason=reason,
        limited_by=limited_by,
        blocking=outcome.groups,
        log_start=start,
        high_watermark=hw,
        delete_before=cut,
        records=records,
        bytes=_share(p.size_bytes, records, span),
        lag_records=lag,
        lag_bytes=_share(p.size_bytes, lag, span),
        size_bytes=p.size_bytes,
        budget=budget,
    )


# -- who pins the disk -------------------------------------------------------------------------------


def pin(
    partitions: Sequence[PartitionFacts], decisions: Sequence[PartitionDecision], names: GroupNames
) -> None:
    """Where the groups named for a partition start reading (`unread_from`), and what the one group named
    alone pins: the records from there up to where the cut would be had that group read everything, all
    else as it is (`pinned_records`, `pinned_bytes`).

    The group read up to the high watermark, the cut moves to the next level: the lowest other counted
    commit, capped by the offset at now - consumedRetention and the high watermark. A group alone at the
    minimum pins up to the next commit above it; the one group missing a commit (or, alone, outside the log)
    pins from the log start. Nothing is pinned alone where groups stand together (tied at the minimum,
    several behind a hold) or where another rule would hold the partition anyway."""
    above: dict[int, int] = {}  # partitions whose next level is the lowest commit above the minimum
    levels: dict[int, int | None] = {}  # the others' lowest commit, where it is known without a read
    for i, (f, d) in enumerate(zip(partitions, decisions, strict=True)):
        p, s = f.state, f.commits
        if not d.blocking.total or p.log_start is None or p.high_watermark is None:
            continue
        limiting = d.limited_by is LimitedBy.CONSUMER_POSITION
        if d.budget is not None and d.budget.evicted:
            # An eviction stopped at a required group's commit: the cut is where it starts reading.
            d.unread_from = d.delete_before if limiting else None
            continue
        d.unread_from = s.min_committed if limiting and s.min_committed is not None else p.log_start
        if d.blocking.total != 1 or p.time_offset is None:
            continue
        if limiting and s.min_committed is not None:
            above[i] = s.min_committed
        elif (
            d.reason in (HoldReason.NO_COMMIT, HoldReason.REQUIRED_GROUP_MISSING)
            and f.topic.readers - s.committed == 1  # the one reader without a commit (no other lacks one)
            and not out_of_range(f)
        ):
            levels[i] = s.min_committed  # the group has no commit: every commit is another's
        elif d.reason is HoldReason.OFFSET_OUT_OF_RANGE and s.min_committed is not None:
            if s.min_committed < p.log_start:  # it is the one below the log start, the minimum
                above[i] = s.min_committed
            else:  # it is the one above the high watermark: the minimum is another's
                levels[i] = s.min_committed
    if above:
        levels.update(dict.fromkeys(above))
        levels.update(names.above(above))
    for i, level in levels.items():
        p, d = partitions[i].state, decisions[i]
        assert p.high_watermark is not None and p.time_offset is not None and d.unread_from is not None
        hw = p.high_watermark
        cut = min(hw if level is None else level, p.time_offset, hw)
        d.pinned_records = max(0, cut - d.unread_from)
        d.pinned_bytes = _share(p.size_bytes, d.pinned_records, hw - (p.log_start or 0))


def behind_log_start(
    partitions: Sequence[PartitionFacts], decisions: Sequence[PartitionDecision], names: GroupNames
) -> None:
    """Every counted commit below its partition's log start (`behind`): the records between are gone
    before the group read them, whatever removed them (unread loss, analysis/unread.py). The commits are
    read only for the partitions whose lowest counted commit is below the log start."""
    starts = {
        i: f.state.log_start
        for i, f in enumerate(partitions)
        if f.state.log_start is not None
        and f.commits.min_committed is not None
        and f.commits.min_committed < f.state.log_start
    }
    for i, found in (names.below(starts) if starts else {}).items():
        decisions[i].behind = tuple(found)


def unread_positions(decisions: Iterable[PartitionDecision]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the offset of the first record its named groups have not read, where they have
    not read everything: whose timestamp `set_oldest_unread` needs."""
    return {
        (d.topic, d.partition): d.unread_from
        for d in decisions
        if d.unread_from is not None and d.high_watermark is not None and d.unread_from < d.high_watermark
    }


def set_oldest_unread(result: PlanResult, timestamps: Mapping[tuple[str, int], int], now_ms: int) -> None:
    """Each limiting group's oldest unread record: the oldest timestamp, over its partitions, of the record
    at its position (`timestamps`: (topic, partition) -> ms, the records at `unread_positions`)."""
    oldest: dict[tuple[str, str], int] = {}
    for d in result.decisions:
        stamp = timestamps.get((d.topic, d.partition))
        if stamp is not None:
            for g in d.blocking.names:
                oldest[d.topic, g] = min(stamp, oldest.get((d.topic, g), stamp))
    for t in result.topics:
        for entry in t.limiting:
            stamp = oldest.get((t.topic, entry.group))
            if stamp is not None:
                entry.oldest_unread = rfc3339(stamp)
                entry.oldest_unread_age_seconds = max(0, (now_ms - stamp) // 1000)


# -- the result --------------------------------------------------------------------------------------


class BelowLogStart(NamedTuple):
    """A counted group's commit below its partition's log start: the records between are gone unread
    (what unread-loss accounting counts, analysis/unread.py)."""

    topic: str
    group: str
    partition: int
    committed: int
    log_start: int


@dataclass
class PlanResult:
    """The collected plan: the summary and per-topic list for the policy status, the partitions, the cuts,
    and the counted groups (the DeleteRecords' ConsumedBy guard)."""

    summary: PlanSummary
    topics: list[TopicPlan]
    partitions: list[PartitionPlan]
    deletes: list[PartitionOffset]
    counted_groups: list[str] = field(default_factory=list)
    decisions: list[PartitionDecision] = field(default_factory=list, repr=False)
    evictions: list[Eviction] = field(default_factory=list)  # the cuts spec.budget moved past groups

    @property
    def below_log_start(self) -> list[BelowLogStart]:
        """Every counted commit below its partition's log start: what unread-loss accounting counts."""
        return [
            BelowLogStart(d.topic, c.group, d.partition, c.offset, d.log_start)
            for d in self.decisions
            if d.log_start is not None
            for c in d.behind
        ]


def summarize(
    decisions: Sequence[PartitionDecision], counted_groups: Sequence[str] = (), max_held_per_topic: int = 100
) -> PlanResult:
    """The plan in the shared plan models (one entry per partition: small next to the commits)."""
    partitions: list[PartitionPlan] = []
    topics: dict[str, TopicPlan] = {}
    limiting: dict[str, dict[str, LimitingGroup]] = {}
    cuts: list[PartitionOffset] = []
    evictions: list[Eviction] = []
    for r in sorted(decisions, key=lambda d: (d.topic, d.partition)):
        partitions.append(
            PartitionPlan.model_construct(  # computed here, nothing to validate (10 000s of them)
                topic=r.topic,
                partition=r.partition,
                log_start_offset=r.log_start,
                high_watermark=r.high_watermark,
                delete_before=r.delete_before,
                records=r.records,
                bytes=r.bytes,
                reason=r.reason,
                blocking_groups=r.blocking_groups,
                lag_records=r.lag_records,
                lag_bytes=r.lag_bytes,
                over_budget=r.budget is not None and r.budget.state is BudgetState.OVER,
            )
        )
        t = topics.setdefault(r.topic, TopicPlan(topic=r.topic))
        t.partitions += 1
        t.deletable_records += r.records
        t.reclaimable_bytes += r.bytes
        held = r.status in (PartitionStatus.HELD, PartitionStatus.NOT_DELETABLE)
        if held and r.reason is not None:
            t.held_count += 1
            if len(t.held) < max_held_per_topic:
                t.held.append(
                    HeldPartition(
                        partition=r.partition,
                        reason=r.reason,
                        blocking_groups=r.blocking_groups,
                        blocking_count=r.blocking_count,
                    )
                )
        # Who holds the disk: the slowest counted group where it limits the cut, and a group behind a hold
        # with everything the partition retains (as far as the plan can tell, it has read none of it).
        lag: tuple[int, int] | None = None
        if r.limited_by is LimitedBy.CONSUMER_POSITION:
            lag = (r.lag_records, r.lag_bytes)
        elif r.status is PartitionStatus.HELD and r.log_start is not None and r.high_watermark is not None:
            lag = (r.high_watermark - r.log_start, r.size_bytes or 0)
        if lag is not None:
            for g in r.blocking.names:
                entry = limiting.setdefault(r.topic, {}).setdefault(g, LimitingGroup(group=g))
                entry.partitions += 1
                entry.lag_records += lag[0]
                entry.lag_bytes += lag[1]
                entry.pinned_records += r.pinned_records
                entry.pinned_bytes += r.pinned_bytes
        if r.status is PartitionStatus.DELETABLE and r.delete_before is not None:
            cuts.append(PartitionOffset(topic=r.topic, partition=r.partition, offset=r.delete_before))
        if r.budget is not None:
            _budget_figures(r, r.budget, t, evictions)
    for name, groups in limiting.items():
        ranked = sorted(groups.values(), key=lambda g: (-g.lag_bytes, -g.lag_records, g.group))
        topics[name].limiting = ranked[:MAX_LIMITING_PER_TOPIC]
        topics[name].limiting_count = len(ranked)
    summary = PlanSummary(
        topics=len(topics),
        partitions=len(partitions),
        deletable_records=sum(t.deletable_records for t in topics.values()),
        reclaimable_bytes=sum(t.reclaimable_bytes for t in topics.values()),
        held_partitions=sum(t.held_count for t in topics.values()),
        over_budget_partitions=sum(t.over_budget for t in topics.values()),
        evicted_records=sum(g.records for e in evictions for g in e.groups),
    )
    return PlanResult(
        summary, list(topics.values()), partitions, cuts, sorted(counted_groups), list(decisions), evictions
    )


def _budget_figures(r: PartitionDecision, check: BudgetCheck, topic: TopicPlan, out: list[Eviction]) -> None:
    """A partition's budget in its topic's figures, and its eviction (every group) in `out`."""
    if check.state is BudgetState.OVER:
        topic.over_budget += 1
    if not check.evicted or r.delete_before is None:
        return
    out.append(
        Eviction.model_construct(
            topic=r.topic,
            partition=r.partition,
            offset=r.delete_before,
            groups=[UnreadLoss.model_construct(group=g.group, records=g.records) for g in check.evicted],
        )
    )
    for g in check.evicted:
        topic.evicted_count += 1
        if len(topic.evicted) < MAX_EVICTED_PER_TOPIC:
            topic.evicted.append(EvictedGroup(group=g.group, partition=r.partition, records=g.records))
