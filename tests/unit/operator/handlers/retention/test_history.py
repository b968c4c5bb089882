"""historyLimit: only the oldest finished objects beyond the limit go; unfinished ones always stay."""

from __future__ import annotations

from typing import Any

from ebb_operator.handlers.retention.history import prune_candidates


def _obj(name: str, done: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "done": done}


def test_history_limit_prunes_only_the_oldest_finished_objects() -> None:
    items = [_obj("a", True), _obj("b", False), _obj("c", True), _obj("d", True)]
    assert prune_candidates(items, 2, lambda o: bool(o["done"])) == ["a"]
    assert prune_candidates(items, 0, lambda o: bool(o["done"])) == ["a", "c", "d"]
    assert prune_candidates(items, 5, lambda o: bool(o["done"])) == []
