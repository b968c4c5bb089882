"""Whatever the cluster looks like, no cut passes a counted group's commit, the high watermark, or the
offset at now - consumedRetention, and none lies at or below the log start. With a budget (EvictSlowest)
a cut passes only the commits of the groups it names as evicted, never a required group's, and no further
than the budget needs.

Hypothesis draws small clusters (topics, partitions with their offsets, sizes and lookup failures, groups
with members, subscriptions and description failures, commits anywhere in and around each log) and
policies (include, exclude, required, exclusive, inactiveAfter, the grant's groups, a budget); the commits
reach `decide` through the plain reference of the Spark work (tests/plan_reference.py). A second strategy
draws clusters where an eviction has work. Derandomized with a modest number of examples: the same cases
every run, a few seconds of the unit tier.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ebb_operator.analysis.decide import BudgetState, LimitedBy, PartitionStatus, budget_offset, deletes
from ebb_operator.analysis.policy import AnalysisPolicy, BudgetRule
from ebb_operator.analysis.snapshot import GroupState, PartitionState, Snapshot, TopicState
from ebb_operator.models.retention_policy import BudgetAction
from tests.plan_reference import Commit, reference

NOW = 1_800_000_000_000
HOUR = 3_600_000
GROUPS = ("a", "b", "c", "audit", "spy")
TOPICS = ("orders", "orders-log")
CLEANUP = ("delete", "delete", "compact", "compact,delete")
TOPIC_ERRORS = (*[None] * 11, "DescribeConfigs: TOPIC_AUTHORIZATION_FAILED")
# log start, length, the offset at now - consumedRetention past the log start (-1: lookup failed), the
# partition's lookup error, whether the snapshot lists it, its largest replica's bytes (None: unknown) and
# the offset at now - budget.maxAge past the log start
PARTITIONS = st.tuples(
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(-1, 45),
    st.sampled_from([None] * 11 + ["ListOffsets: NOT_LEADER_OR_FOLLOWER"]),
    st.sampled_from([True] * 11 + [False]),
    st.one_of(st.none(), st.integers(0, 4_000)),
    st.integers(0, 45),
)


def budgets(*actions: BudgetAction) -> st.SearchStrategy[BudgetRule]:
    return st.builds(
        BudgetRule,
        max_bytes=st.one_of(st.none(), st.integers(1, 3_000)),
        max_age_ms=st.sampled_from([None, 2 * HOUR]),
        action=st.sampled_from(actions),
    )


BUDGETS = st.one_of(st.none(), budgets(BudgetAction.EVICT_SLOWEST, BudgetAction.ALERT))
# described at all, members, the matched topics they read, a description failure, seen empty since
GROUP_STATES = st.tuples(
    st.booleans(),
    st.integers(0, 2),
    st.sampled_from([(), ("orders",), ("orders-log",), TOPICS]),
    st.sampled_from([None] * 19 + ["DescribeGroups: COORDINATOR_NOT_AVAILABLE"]),
    st.sampled_from([None, NOW - 10 * HOUR, NOW - HOUR]),
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, AnalysisPolicy, list[Commit]]:
    topics, partitions, commits = [], [], []
    # When each group last committed (None: the source has no commit times, as OffsetFetch).
    stamps = draw(
        st.lists(st.sampled_from([None, NOW - 10 * HOUR, NOW - 2 * HOUR, NOW]), min_size=5, max_size=5)
    )
    for name in TOPICS:
        cleanup, topic_error = draw(st.sampled_from(CLEANUP)), draw(st.sampled_from(TOPIC_ERRORS))
        topics.append(TopicState(name, cleanup, topic_error))
        for p in range(draw(st.integers(1, 3))):
            start, length, at, error, listed, replica, aged = draw(PARTITIONS)
            hw = start + length
            if listed or p == 0:  # an unlisted partition appeared after the snapshot
                time_offset = None if at < 0 else min(start + at, hw)
                age_offset = min(start + aged, hw)  # (maxAge >= consumedRetention: never below time_offset)
                if time_offset is not None:
                    age_offset = min(age_offset, time_offset)
                partitions.append(
                    PartitionState(name, p, start, hw, 1_000, time_offset, error, replica, age_offset)
                )
            # Per group: no commit (None), or an offset in and around the log.
            found = draw(
                st.lists(st.one_of(st.none(), st.integers(max(0, start - 5), hw + 5)), min_size=5, max_size=5)
            )
            commits += [
                Commit(g, name, p, o, stamps[i])
                for i, (g, o) in enumerate(zip(GROUPS, found, strict=True))
                if o is not None
            ]
    groups = []
    for g, (described, members, reads, error, since) in zip(
        GROUPS, draw(st.lists(GROUP_STATES, min_size=5, max_size=5)), strict=True
    ):
        if described:
            groups.append(
                GroupState(
                    g,
                    None,
                    None if error else members,
                    () if error else reads,
                    error,
                    None if members else since,
                )
            )
    some_groups = st.lists(st.sampled_from(GROUPS), max_size=3, unique=True).map(tuple)
    policy = AnalysisPolicy(
        namespace="ns",
        name="rp",
        consumed_retention_ms=HOUR,
        topics_include=draw(st.sampled_from([("orders.*",), (".*",), ("orders",)])),
        groups_include=draw(st.sampled_from([(".*",), ("a|b",), ("a",)])),
        groups_exclude=draw(some_groups),
        required=draw(st.lists(st.sampled_from(GROUPS), max_size=1).map(tuple)),
        exclusive=draw(st.booleans()),
        inactive_after_ms=draw(st.sampled_from([None, HOUR, 5 * HOUR])),
        discountable_groups=draw(st.one_of(st.none(), some_groups)),
        budget=draw(BUDGETS),
    )
    return Snapshot(NOW, partitions, topics, groups), policy, commits


@st.composite
def evicting_clusters(draw: st.DrawFn) -> tuple[Snapshot, AnalysisPolicy, list[Commit]]:
    """Clusters where a budget's eviction has work: one topic, every group committed on every partition
    (some below the log start, as an earlier eviction leaves them), always an EvictSlowest budget."""
    partitions, commits = [], []
    for p in range(draw(st.integers(1, 3))):
        start, length, at, _, _, replica, aged = draw(PARTITIONS)
        hw = start + length
        time_offset = min(start + max(at, 0), hw)
        age_offset = min(start + aged, time_offset)
        partitions.append(
            PartitionState("orders", p, start, hw, 1_000, time_offset, None, replica, age_offset)
        )
        found = draw(st.lists(st.integers(max(0, start - 5), hw), min_size=5, max_size=5))
        commits += [Commit(g, "orders", p, o) for g, o in zip(GROUPS, found, strict=True)]
    budget = draw(budgets(BudgetAction.EVICT_SLOWEST))
    policy = AnalysisPolicy(
        namespace="ns",
        name="rp",
        consumed_retention_ms=HOUR,
        topics_include=("orders",),
        required=draw(st.lists(st.sampled_from(GROUPS), max_size=2, unique=True).map(tuple)),
        budget=budget,
    )
    return Snapshot(NOW, partitions, [TopicState("orders", "delete", None)]), policy, commits


PROPERTIES = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTIES
@given(clusters())
def test_no_cut_passes_a_counted_commit_the_high_watermark_or_the_retention_time(
    cluster: tuple[Snapshot, AnalysisPolicy, list[Commit]],
) -> None:
    check(*cluster)


@PROPERTIES
@given(evicting_clusters())
def test_an_eviction_passes_only_the_groups_it_names_never_a_required_one_and_no_further_than_needed(
    cluster: tuple[Snapshot, AnalysisPolicy, list[Commit]],
) -> None:
    check(*cluster)


def check(snapshot: Snapshot, policy: AnalysisPolicy, commits: list[Commit]) -> None:
    ref = reference(snapshot, policy, NOW, commits)
    plan = ref.plan()
    counted, required = set(ref.roles.counted), set(policy.required)
    topics = {t.topic: t for t in snapshot.topics}
    listed = {(p.topic, p.partition) for p in snapshot.partitions}
    outsiders = set(ref.roles.outside)
    for d in plan.decisions:
        event(str(d.reason or d.status))  # what the cases cover: --hypothesis-show-statistics
        evicted = {g.group for g in d.budget.evicted} if d.budget is not None else set()
        if evicted:
            event("evicted, " + str(d.budget.state if d.budget else None))
        assert (d.delete_before is not None) == (d.status is PartitionStatus.DELETABLE)
        if d.delete_before is None:
            assert d.records == 0
            continue
        cut = d.delete_before
        p = next(p for p in snapshot.partitions if (p.topic, p.partition) == (d.topic, d.partition))
        assert p.error is None and topics[d.topic].error is None and deletes(topics[d.topic].cleanup_policy)
        assert p.log_start is not None and p.high_watermark is not None and p.time_offset is not None
        assert p.log_start < cut <= p.high_watermark, "the cut lies in the readable log"
        assert cut <= p.time_offset, "records younger than consumedRetention stay"
        assert d.records == cut - p.log_start
        on_topic = [c for c in commits if c.topic == d.topic]
        assert all((c.topic, c.partition) in listed for c in on_topic if c.group in counted), "topic grew"
        readers = {c.group for c in on_topic if c.group in counted} | required
        readers |= {g.group for g in snapshot.groups if g.group in counted and d.topic in g.topics}
        here = {c.group: c.offset for c in on_topic if c.partition == d.partition}
        for g in readers:
            assert g in here, f"{g} reads {d.topic} and has no commit on partition {d.partition}"
            assert here[g] <= p.high_watermark
            if g in evicted:
                assert g not in required, f"required {g} evicted"
                assert here[g] < cut, f"{g} named as evicted, but the cut {cut} does not pass its commit"
            else:
                assert cut <= here[g], f"cut {cut} passes {g}'s commit {here[g]}"
        if evicted:
            # An eviction cuts no further than the budget needs: to the budget's lowest cut, or short of it.
            assert policy.budget is not None and policy.budget.action is BudgetAction.EVICT_SLOWEST
            target = budget_offset(p, policy.budget)
            assert target is not None and cut <= target, f"cut {cut} past the budget's {target}"
            assert d.budget is not None
            assert (d.budget.state is BudgetState.WITHIN) == (cut == target)
            assert (d.limited_by is LimitedBy.BUDGET) == (cut == target)
            if cut < target:  # stopped short only where a required group or consumedRetention stands
                stops = [p.time_offset, *(here[g] for g in required if g in here)]
                assert cut == min(stops), f"cut {cut} short of {target} with nothing at it"
            assert sorted(d.budget.evicted) == sorted(
                (g, cut - max(here[g], p.log_start)) for g in evicted
            ), "each evicted group's loss: from its commit (or the log start) to the cut"
        assert not ref.roles.failed, "a counted group whose topics are unknown"
        if policy.exclusive:
            read_by = {c.group for c in on_topic} | {g.group for g in snapshot.groups if d.topic in g.topics}
            assert not read_by & outsiders, "an exclusive policy's topic is read by a group outside include"
    assert sorted(c.offset for c in plan.deletes) == sorted(
        d.delete_before for d in plan.decisions if d.delete_before is not None
    )
