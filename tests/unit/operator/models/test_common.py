"""Durations, conditions and topic selectors accept what a user writes in YAML and refuse the rest by name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from ebb_operator.models.common import (
    Condition,
    ConditionStatus,
    TopicSelector,
    duration_ms,
    parse_duration,
    parse_quantity,
    set_condition,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h30m", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1w", "30m1h", "1.5h", "h"])
def test_bad_durations_are_refused_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="units d, h, m, s"):
        parse_duration(text)


def test_duration_ms_is_kafkas_unit() -> None:
    assert duration_ms("1h") == 3_600_000


def test_transition_time_moves_only_when_status_changes() -> None:
    first = [Condition(type="Ready", status=ConditionStatus.FALSE, reason="A", last_transition_time="t0")]
    same = set_condition(first, "Ready", ConditionStatus.FALSE, "B", "still false", 2)
    assert same[0].last_transition_time == "t0" and same[0].reason == "B" and same[0].observed_generation == 2
    flipped = set_condition(first, "Ready", ConditionStatus.TRUE, "Applied", "", 2)
    assert flipped[0].last_transition_time != "t0"


def test_condition_reason_must_be_camel_case() -> None:
    with pytest.raises(ValidationError, match="reason"):
        Condition(type="Ready", status=ConditionStatus.TRUE, reason="not camel")


def test_topic_selector_matches_whole_names() -> None:
    sel = TopicSelector(include=["orders.*", "audit"], exclude=["orders-dlq"])
    assert sel.matches("orders-eu") and sel.matches("audit")
    assert not sel.matches("orders-dlq") and not sel.matches("audit-old") and not sel.matches("x-orders")


@pytest.mark.parametrize("regex", ["(unclosed", "(?=look)", r"(a)\1"])
def test_regexes_outside_re2_are_refused(regex: str) -> None:
    with pytest.raises(ValidationError, match="regex"):
        TopicSelector(include=[regex])


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1048576", 2**20), ("20Gi", 20 * 2**30), ("512Mi", 512 * 2**20), ("3k", 3_000), ("2T", 2 * 10**12)],
)
def test_quantities_parse_as_kubernetes_writes_them(text: str, expected: int) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["0", "20GB", "1.5Gi", "-1", "", "20 Gi", "Gi"])
def test_bad_quantities_are_refused_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="a positive whole number with an optional suffix Ki, Mi, Gi"):
        parse_quantity(text)
