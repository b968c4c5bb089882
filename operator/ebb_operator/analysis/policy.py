"""The job's view of a RetentionPolicy: a small typed structure, mapped from the object's spec (DESIGN §4).

The job reads only the fields that shape the plan. It keeps its own structure, not the CRD model, so the
analysis can run from a file on a laptop, inside a SparkApplication, or in a benchmark, with one mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class PolicyError(ValueError):
    """The policy cannot be analysed as written; the message says which field and why."""


def parse_duration_ms(text: str, field_name: str) -> int:
    """`90s`, `15m`, `1h30m`, `7d` (also `500ms`) to milliseconds; anything else is a PolicyError."""
    s = text.strip()
    pos, total = 0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += int(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise PolicyError(f"{field_name}: {text!r} is not a duration like 90s, 15m, 1h30m or 7d")
    return total


def _patterns(values: Any, field_name: str, default: Sequence[str]) -> tuple[str, ...]:
    """Regexes (full match, as Kafka's pattern lists): checked here so a typo fails before any lookup."""
    if values is None:
        return tuple(default)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PolicyError(f"{field_name}: expected a list of regular expressions")
    for v in values:
        try:
            re.compile(v)
        except re.error as e:
            raise PolicyError(f"{field_name}: {v!r} is not a valid regular expression: {e}") from e
    return tuple(values)


@dataclass(frozen=True)
class AnalysisPolicy:
    """What one analysis run needs from a RetentionPolicy."""

    namespace: str
    name: str
    consumed_retention_ms: int
    topics_include: tuple[str, ...]
    topics_exclude: tuple[str, ...] = ()
    groups_include: tuple[str, ...] = (".*",)
    groups_exclude: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    exclusive: bool = False
    inactive_after_ms: int | None = None
    dry_run: bool = False
    uid: str | None = None
    bootstrap_servers: str | None = None
    secret_name: str | None = None
    client_config: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_resource(cls, obj: Mapping[str, Any]) -> AnalysisPolicy:
        """Map a RetentionPolicy object (as the API server returns it, or a YAML file) to the job's inputs."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            raise PolicyError("spec: missing")
        topics = spec.get("topics") or {}
        include = _patterns(topics.get("include"), "spec.topics.include", ())
        if not include:
            # Fail closed: a policy that names no topics must not default to every topic.
            raise PolicyError("spec.topics.include: at least one pattern is required")
        consumers = spec.get("consumers") or {}
        required = consumers.get("required") or []
        if not isinstance(required, list) or not all(isinstance(g, str) for g in required):
            raise PolicyError("spec.consumers.required: expected a list of group ids")
        retention = spec.get("consumedRetention")
        if not isinstance(retention, str):
            raise PolicyError("spec.consumedRetention: required, a duration like 1h or 7d")
        inactive = consumers.get("inactiveAfter")
        cluster = spec.get("cluster") or {}
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            uid=meta.get("uid"),
            consumed_retention_ms=parse_duration_ms(retention, "spec.consumedRetention"),
            topics_include=include,
            topics_exclude=_patterns(topics.get("exclude"), "spec.topics.exclude", ()),
            groups_include=_patterns(consumers.get("include"), "spec.consumers.include", (".*",)),
            groups_exclude=_patterns(consumers.get("exclude"), "spec.consumers.exclude", ()),
            required=tuple(required),
            exclusive=bool(consumers.get("exclusive", False)),
            inactive_after_ms=(
                parse_duration_ms(inactive, "spec.consumers.inactiveAfter") if inactive is not None else None
            ),
            dry_run=bool(spec.get("dryRun", False)),
            bootstrap_servers=cluster.get("bootstrapServers"),
            secret_name=(cluster.get("secretRef") or {}).get("name"),
        )
