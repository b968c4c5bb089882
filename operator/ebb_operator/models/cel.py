"""CEL rules the CRDs carry, written so the API server can evaluate them within its cost budget.

Durations are strings with a day unit ("7d", "1d12h") that CEL's duration() does not know. A rule
therefore counts seconds: the days before "d" times 86400, plus duration() of the Go-style rest.
(Rebuilding a Go string with string(int) is refused by the apiserver's cost estimator.)
"""

from __future__ import annotations

from ebb_operator.models.common import parse_duration


def cel_seconds(field: str = "") -> str:
    """CEL for the length in seconds of the duration in `self.<field>`, or in `self` without a field
    (a rule on the duration property itself); the duration has pattern DURATION_PATTERN."""
    s = f"self.{field}" if field else "self"
    rest = f"({s}.contains('d') ? {s}.substring({s}.indexOf('d') + 1) : {s})"
    days = f"({s}.contains('d') ? int({s}.substring(0, {s}.indexOf('d'))) : 0)"
    return f"({days} * 86400 + ({rest} == '' ? 0 : duration({rest}).getSeconds()))"


def duration_at_least(longer: str, shorter: str, message: str) -> dict[str, str]:
    """A rule: when both durations are set, `longer` is not shorter than `shorter`."""
    both_set = f"!has(self.{longer}) || !has(self.{shorter})"
    return {
        "rule": f"{both_set} || {cel_seconds(longer)} >= {cel_seconds(shorter)}",
        "message": message,
    }


def duration_minimum(minimum: str, why: str) -> dict[str, str]:
    """A rule on a duration property: at least `minimum` (the API server's message names field and value)."""
    seconds = int(parse_duration(minimum).total_seconds())
    return {"rule": f"{cel_seconds()} >= {seconds}", "message": f"shorter than the minimum {minimum} ({why})"}
