"""A refused spec is one line naming the field, the value and the rule: what `kubectl apply` (the
webhook) and the Ready condition (the reconciler) show, never pydantic's text or its documentation URL."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import DeleteRecordsSpec
from ebb_operator.models.validation import explain


def _explained(model: Any, body: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as err:
        model.model_validate(body)
    return explain(err.value)


def test_an_invalid_re2_pattern_names_field_value_and_rule() -> None:
    line = _explained(CompactionConfigSpec, {"topics": {"include": ["orders-.*", "orders("]}})
    assert line == (
        "spec.topics.include[1] 'orders(': not a valid RE2 regex: missing ) in 'orders('; "
        "rule: RE2 syntax (no lookaround or backreferences), matching whole names"
    )


def test_lookaround_is_refused_as_re2_syntax() -> None:
    line = _explained(CompactionConfigSpec, {"topics": {"include": ["(?=a)a"]}})
    assert line.startswith("spec.topics.include[0] '(?=a)a': not a valid RE2 regex: invalid perl operator")


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ({"partitions": [{"topic": "t", "partition": 0}]}, "spec.partitions[0].offset: required"),
        (
            {"partitions": [{"topic": "t", "partition": 0, "offset": -2}]},
            "spec.partitions[0].offset -2: must be greater than or equal to -1",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "dryrun": True},
            "spec.dryrun True: unknown field (misspelt? the field names are camelCase)",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "guard": "Maybe"},
            "spec.guard 'Maybe': must be 'Consumed', 'ConsumedBy' or 'None'",
        ),
    ],
)
def test_every_problem_reads_field_value_rule(body: dict[str, Any], line: str) -> None:
    assert _explained(DeleteRecordsSpec, body) == line


def test_many_problems_stay_one_line_without_library_text() -> None:
    body = {"partitions": [{"topic": "bad topic", "partition": -1, "offset": -5}], "a": 1, "b": 2}
    line = _explained(DeleteRecordsSpec, body)
    assert "\n" not in line and line.endswith("; and 2 more")
    assert "pydantic" not in line and "http" not in line and "Input should" not in line
    assert line.count("spec.") == 3
