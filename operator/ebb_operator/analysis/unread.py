"""Unread loss, counted once: one run's accounting (what is counted: `models/unread.py`).

The run sees every counted group's commit below its partition's log start (`BelowLogStart`); the ledger the
last run left says, per (group, partition) still behind, up to which offset its loss is already counted
(its mark: the log start that run saw). A run counts, per such pair, the offsets from the later of the
commit and the mark up to the log start, then marks the log start. So an offset is counted once, however
many runs see it, and a restarted operator or a new leader goes on from the ledger in the policy's status.

A mark ends when its counted group is no longer behind on the partition (it committed at or past the log
start, or its commit is gone), when the group is gone from the cluster, or when the policy no longer matches
the topic: should the group be behind again, its loss counts from its commit, which (commits move forward)
is at or past the records counted before. Marks the run cannot check stay as they are: on a partition whose
log start it could not read, and of a group that exists but is not counted this run (inactive, excluded
for now: its commits were not read). A mark above the log start (the topic was deleted and created again:
its log started over) counts as no mark. A commit moved back below the log start (an offset reset to an
earlier offset) is counted from where it now is: the group asked to read records that are gone.

Bounds (the ledger lives in the policy's status): at most MAX_MARKS partitions marked and MAX_ACCOUNTS
(topic, group) entries. A pair that finds no room is neither counted nor marked: it is counted by a later
run that has room (`deferred` says how many wait), never twice. Entries without marks (loss counted
earlier, the group caught up since) keep their totals for the status until room is needed, oldest first.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ebb_operator.analysis.decide import BelowLogStart
from ebb_operator.models.common import rfc3339
from ebb_operator.models.unread import (
    MAX_ACCOUNTS,
    MAX_MARKS,
    MAX_UNREAD_PER_TOPIC,
    UnreadAccount,
    UnreadCounted,
    UnreadTotal,
)

Key = tuple[str, str]  # (topic, group)


@dataclass
class Accounting:
    ledger: list[UnreadAccount]
    counted: list[UnreadCounted] = field(default_factory=list)
    deferred: int = 0  # pairs that found no room in the ledger: counted by a later run


def account(
    ledger: Sequence[UnreadAccount],
    below: Iterable[BelowLogStart],
    log_starts: Mapping[tuple[str, int], int | None],
    counted_groups: Collection[str],
    groups: Collection[str],
    now_ms: int,
) -> Accounting:
    """The ledger after this run and what it counted. `log_starts`: every partition of the matched topics,
    its log start or None where it could not be read; `counted_groups`: the groups counted this run;
    `groups`: every group the cluster has."""
    now = rfc3339(now_ms)
    accounts = {(a.topic, a.group): a.model_copy(deep=True) for a in ledger}
    before = {
        (key, p): to for key, a in accounts.items() for p, to in zip(a.partitions, a.counted_to, strict=False)
    }
    # Kept as they are: the marks this run cannot check.
    marks = {
        (key, p): to
        for (key, p), to in before.items()
        if (key[0], p) in log_starts
        and (log_starts[key[0], p] is None or (key[1] not in counted_groups and key[1] in groups))
    }
    marked = {key for key, _ in marks}
    counted: dict[Key, UnreadCounted] = {}
    deferred = 0
    # Pairs marked before come first: they hold their room in the ledger already.
    for b in sorted(below, key=lambda b: (((b.topic, b.group), b.partition) not in before, b)):
        key = (b.topic, b.group)
        prev = before.get((key, b.partition))
        if prev is not None and prev > b.log_start:
            prev = None  # the log started over
        if prev is None and (len(marks) >= MAX_MARKS or (key not in marked and len(marked) >= MAX_ACCOUNTS)):
            deferred += 1
            continue
        records = b.log_start - (b.committed if prev is None else max(b.committed, prev))
        marks[key, b.partition] = b.log_start
        marked.add(key)
        if records <= 0:
            continue
        entry = accounts.get(key)
        if entry is None:
            entry = accounts[key] = UnreadAccount(topic=b.topic, group=b.group, since=now, last_counted=now)
        entry.records += records
        entry.last_counted = now
        c = counted.setdefault(key, UnreadCounted(topic=b.topic, group=b.group, records=0))
        c.records += records
        c.partitions.append(b.partition)
    for a in accounts.values():
        a.partitions, a.counted_to = [], []
    for (key, p), to in sorted(marks.items()):
        accounts[key].partitions.append(p)
        accounts[key].counted_to.append(to)
    kept = [a for a in accounts.values() if a.partitions]
    done = [a for a in accounts.values() if not a.partitions and a.records]
    done.sort(key=lambda a: a.last_counted, reverse=True)  # RFC 3339 times sort as text
    out = sorted(kept + done[: max(0, MAX_ACCOUNTS - len(kept))], key=lambda a: (a.topic, a.group))
    return Accounting(out, [counted[k] for k in sorted(counted)], deferred)


def by_topic(ledger: Iterable[UnreadAccount]) -> dict[str, tuple[list[UnreadTotal], int]]:
    """Per topic, its groups' loss for status topics[].unread (most records first, at most
    MAX_UNREAD_PER_TOPIC) and how many groups have some."""
    grouped: dict[str, list[UnreadTotal]] = {}
    for a in ledger:
        if a.records:
            loss = UnreadTotal(group=a.group, records=a.records, since=a.since, last_counted=a.last_counted)
            grouped.setdefault(a.topic, []).append(loss)
    return {
        t: (sorted(ls, key=lambda u: (-u.records, u.group))[:MAX_UNREAD_PER_TOPIC], len(ls))
        for t, ls in grouped.items()
    }
