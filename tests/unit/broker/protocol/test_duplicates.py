"""Repeated entries of a request: the rules every handler applies before any work (protocol/duplicates.py)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from ebb_broker.protocol.duplicates import once_each, partitions_once, split_repeats


def test_split_repeats_keeps_the_first_order_and_names_the_repeats() -> None:
    assert split_repeats(["b", "a", "b", "c", "b"]) == (["b", "a", "c"], {"b"})
    assert split_repeats([]) == ([], set())


def test_once_each_keeps_the_first_entry_of_a_key() -> None:
    first, again, other = NS(t=2, n="x", v=1), NS(t=2, n="x", v=2), NS(t=4, n="x", v=3)
    assert once_each([first, other, again], lambda r: (r.t, r.n)) == [(first, True), (other, False)]


def test_partitions_once_merges_topics_and_keeps_the_last_entry_of_a_partition() -> None:
    """A topic named twice is one topic; a repeated partition keeps its first place and its last entry,
    as Kafka's maps (DeleteRecords answers the last offset asked)."""
    topics = [
        NS(name="t", parts=[NS(i=1, offset=5), NS(i=0, offset=1)]),
        NS(name="u", parts=[NS(i=0, offset=9)]),
        NS(name="t", parts=[NS(i=1, offset=7)] * 1000),
    ]
    wanted, repeated = partitions_once(topics, lambda t: t.name, lambda t: t.parts, lambda p: p.i)
    assert {name: {i: p.offset for i, p in parts.items()} for name, parts in wanted.items()} == {
        "t": {1: 7, 0: 1},
        "u": {0: 9},
    }
    assert list(wanted) == ["t", "u"] and list(wanted["t"]) == [1, 0]
    assert repeated == {("t", 1)}
