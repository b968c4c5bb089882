"""Topic names: Kafka's Topic.validate on the whole string, and its collision rule."""

from __future__ import annotations

import pytest

from ebb_broker.log.topic_names import collision_key, invalid_reason


@pytest.mark.parametrize("name", ["a", "orders.v1_eu-2", "x" * 249, "__consumer_offsets"])
def test_legal_names_pass(name: str) -> None:
    assert invalid_reason(name) is None


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "the empty string is not allowed"),
        (None, "the empty string is not allowed"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("x" * 250, "250 characters, more than the max allowed length 249"),
        ("evil\n", "characters other than ASCII alphanumerics"),  # `$` matched before the newline
        ("\nevil", "characters other than ASCII alphanumerics"),
        ("with space", "characters other than ASCII alphanumerics"),
        ("slash/es", "characters other than ASCII alphanumerics"),
        ("\u00fcmlaut", "characters other than ASCII alphanumerics"),
        ("\u0661\u0662", "characters other than ASCII alphanumerics"),  # digits to str.isdigit
    ],
)
def test_illegal_names_are_refused_with_kafkas_reason(name: str | None, why: str) -> None:
    reason = invalid_reason(name)
    assert reason is not None and reason.startswith("Topic name is invalid: ") and why in reason


def test_dot_and_underscore_collide() -> None:
    assert collision_key("a.b") == collision_key("a_b") == "a_b"
    assert collision_key("a.b") != collision_key("a-b")
