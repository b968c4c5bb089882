"""What a client sent shows in the broker's messages whole when it is of a legal size, cut when it is not:
a hostile request cannot make the broker echo or log megabytes."""

from __future__ import annotations

import pytest

from ebb_broker.log.errors import SHOWN_CHARACTERS, InvalidConfigError, shown, shown_all
from ebb_broker.log.log_config import LogConfig


def test_a_legal_value_shows_whole_a_huge_one_cut_with_its_length() -> None:
    name = "t" * 249  # the longest legal topic name
    assert shown(name) == repr(name)
    huge = "x" * 1_000_000
    text = shown(huge)
    assert text.startswith("'xxx") and text.endswith("... (1000002 characters)")
    assert len(text) < SHOWN_CHARACTERS + 40
    assert shown(ValueError("y" * 10_000)).endswith("... (10014 characters)")


def test_a_list_shows_its_first_items_and_how_many_more() -> None:
    assert shown_all(["a", "b"]) == "a, b"
    assert shown_all([str(i) for i in range(12)]) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (2 more)"


def test_a_config_error_of_a_hostile_request_stays_small() -> None:
    with pytest.raises(
        InvalidConfigError, match=r"retention\.ms.*\.\.\. \(1000002 characters\)"
    ) as bad_value:
        LogConfig.parse({"retention.ms": "9" * 1_000_000})
    assert len(str(bad_value.value)) < 1_000
    with pytest.raises(InvalidConfigError, match=r"unknown topic config 'k0'.*\(90 more\)") as many_keys:
        LogConfig.parse({f"k{i}": "v" for i in range(100)})
    assert len(str(many_keys.value)) < 1_000
