"""Topics, partitions and resources a request names more than once.

A handler expands a request's lists into work per topic, partition or resource; a list that repeats an
entry multiplies that work while the request stays small (a 10 KB Metadata request naming one
1,000-partition topic 2,000 times once made a 52 MB answer and froze every client for 11 s). So every
handler whose work per entry does not come with the entry's own bytes collapses its lists here first,
and answers a repeat as Kafka does for that API:

- answered once (Kafka keys the request by name or partition): Metadata (topic names), OffsetFetch,
  DescribeConfigs, DescribeGroups, DescribeLogDirs, DescribeProducers; DeleteRecords keeps the last
  offset given for a partition, as Kafka's map does;
- refused with INVALID_REQUEST, one answer per repeated entry: ListOffsets (per partition, Kafka's
  ``duplicatePartitions``), CreateTopics, CreatePartitions and DeleteTopics ("Duplicate topic name."),
  AlterConfigs and IncrementalAlterConfigs ("Duplicate resource.").

Produce, OffsetCommit and TxnOffsetCommit carry their data per entry, so a repeat costs what it weighs;
they are left as Kafka leaves them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
P = TypeVar("P")

DUPLICATE_TOPIC = "Duplicate topic name."
DUPLICATE_RESOURCE = "Duplicate resource."


def split_repeats(keys: Iterable[K]) -> tuple[list[K], set[K]]:
    """The distinct keys in the order first seen, and the keys seen more than once."""
    seen: dict[K, None] = {}
    repeated: set[K] = set()
    for key in keys:
        if key in seen:
            repeated.add(key)
        else:
            seen[key] = None
    return list(seen), repeated


def once_each(items: Iterable[T], key: Callable[[T], K]) -> list[tuple[T, bool]]:
    """The first item of each key, in order, with whether the request repeats that key."""
    first: dict[K, T] = {}
    repeated: set[K] = set()
    for item in items:
        k = key(item)
        if k in first:
            repeated.add(k)
        else:
            first[k] = item
    return [(item, k in repeated) for k, item in first.items()]


def partitions_once(
    topics: Iterable[T],
    name: Callable[[T], str],
    partitions: Callable[[T], Iterable[P]],
    index: Callable[[P], int],
) -> tuple[dict[str, dict[int, P]], set[tuple[str, int]]]:
    """Per topic (in the order first seen; a topic named twice is merged) its partition entries by index
    (a repeated partition keeps its first position and its last entry, as Kafka's maps do), and the
    ``(topic, partition)`` pairs the request names more than once."""
    out: dict[str, dict[int, P]] = {}
    repeated: set[tuple[str, int]] = set()
    for t in topics:
        topic = name(t)
        by_index = out.setdefault(topic, {})
        for p in partitions(t):
            i = index(p)
            if i in by_index:
                repeated.add((topic, i))
            by_index[i] = p
    return out, repeated
