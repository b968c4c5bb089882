"""A spec the models refuse, said in one line a user can act on: the field, the value, the rule.

pydantic's own text (`str(ValidationError)`) spans several lines, repeats the input and ends with a URL
to its documentation; `kubectl apply` (the admission webhook) and the Ready condition (the reconciler)
show this line instead, so both say the same thing about the same spec.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

# At most this many problems in the line; the rest are counted.
MAX_PROBLEMS = 3
_MAX_VALUE = 80
# pydantic phrases its rules as "Input should ..."; the line says what the field must be.
_SHOULD = ("Input should", "String should", "List should", "Value should", "Dictionary should")
_BY_TYPE = {
    "missing": "required",
    "extra_forbidden": "unknown field (misspelt? the field names are camelCase)",
}


def _path(root: str, loc: tuple[int | str, ...]) -> str:
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _rule(error: Any) -> str:
    kind = error["type"]
    if kind in _BY_TYPE:
        return _BY_TYPE[kind]
    if kind in ("value_error", "assertion_error") and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])  # our own validators' words, without pydantic's prefix
    message = str(error["msg"])
    for prefix in _SHOULD:
        if message.startswith(prefix):
            return "must" + message[len(prefix) :]
    return message


def _value(error: Any) -> str:
    value = error.get("input")
    if error["type"] == "missing" or not isinstance(value, str | int | float | bool):
        return ""
    text = repr(value)
    return f" {text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 4] + '...' + text[0]}"


def _line(root: str, error: Any) -> str:
    path = _path(root, tuple(error["loc"]))
    return f"{path}{_value(error)}: {_rule(error)}" if path else _rule(error)  # the whole input: no value


def explain(exc: ValidationError, root: str = "spec") -> str:
    """One line: `<field> <value>: <rule>` per problem, `; `-separated, at most MAX_PROBLEMS of them."""
    errors = exc.errors(include_url=False)
    lines = [_line(root, e) for e in errors[:MAX_PROBLEMS]]
    more = len(errors) - MAX_PROBLEMS
    return "; ".join(lines) + (f"; and {more} more" if more > 0 else "")
