"""historyLimit: only the oldest finished objects beyond the limit go; unfinished ones always stay. The runs
of a policy that is gone go too, and only those."""

from __future__ import annotations

from typing import Any

from ebb_operator.handlers.retention.history import orphans, prune_candidates


def _obj(name: str, done: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "done": done}


def test_history_limit_prunes_only_the_oldest_finished_objects() -> None:
    items = [_obj("a", True), _obj("b", False), _obj("c", True), _obj("d", True)]
    assert prune_candidates(items, 2, lambda o: bool(o["done"])) == ["a"]
    assert prune_candidates(items, 0, lambda o: bool(o["done"])) == ["a", "c", "d"]
    assert prune_candidates(items, 5, lambda o: bool(o["done"])) == []


def test_only_the_runs_of_policies_that_are_gone_are_orphans() -> None:
    """A policy is known by its uid: one deleted and created again under its name leaves the old one's runs
    orphaned. A namespace the operator cannot list (it does not serve it) is never judged."""
    owners = {"u-live": "team-a", "u-old": "team-a", "u-b": "team-b", "u-elsewhere": "not-served"}
    live = {"team-a": {"u-live", "u-new"}, "team-b": set()}
    asked: list[str] = []

    def lookup(namespace: str) -> set[str] | None:
        asked.append(namespace)
        return live.get(namespace)

    assert orphans(owners, lookup) == ["u-b", "u-old"]
    assert sorted(asked) == ["not-served", "team-a", "team-b"], "each namespace is listed once"
