"""Types every Ebb kind shares: cluster reference, conditions, durations, topic and group selectors.

Field names are camelCase on the wire (Kubernetes convention) and snake_case in Python; every model
parses with either. Specs forbid unknown fields so a misspelt key is an error, never silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel
from pydantic.config import JsonValue

GROUP = "ebb.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# Durations: an ordered subset of Go's duration syntax plus days, e.g. "90s", "15m", "1h30m", "7d".
# The CRD carries the same pattern; CEL rules compare two durations in seconds (models/cel.py): Go's
# syntax, which CEL's duration() parses, has no day unit, and ours keeps "7d" readable.
DURATION_PATTERN = r"^([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
_DURATION_RE = re.compile(DURATION_PATTERN)
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
# Kafka topic names: at most 249 characters of [a-zA-Z0-9._-] (Kafka's Topic.validate).
TOPIC_NAME_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"
# host:port[,host:port...], the form of Kafka's bootstrap.servers.
BOOTSTRAP_PATTERN = r"^[^,:\s]+:[0-9]{1,5}(,[^,:\s]+:[0-9]{1,5})*$"
# A CamelCase reason, as Kubernetes' metav1.Condition requires.
REASON_PATTERN = r"^[A-Z][A-Za-z0-9]*$"
# Regexes in selectors: no whitespace and none of the constructs RE2 (the API server's and Go's
# engine) lacks, so a pattern means the same to Python, the apiserver and Java (Kafka's own tools).
REGEX_PATTERN = r"^[^\s]+$"
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


def parse_duration(text: str) -> timedelta:
    """Parse an Ebb duration ("1h30m", "7d"); raises ValueError with the accepted form on bad input."""
    match = _DURATION_RE.match(text)
    if not text or match is None or not any(match.groups()):
        raise ValueError(
            f"invalid duration {text!r}: use units d, h, m, s in that order, e.g. 90s, 1h30m, 7d"
        )
    seconds = sum(int(part[:-1]) * _UNIT_SECONDS[part[-1]] for part in match.groups() if part)
    return timedelta(seconds=seconds)


def duration_ms(text: str) -> int:
    """Milliseconds, the unit Kafka's topic configs use (retention.ms, min.compaction.lag.ms, ...)."""
    return int(parse_duration(text).total_seconds() * 1000)


def _check_duration(text: str) -> str:
    parse_duration(text)
    return text


def _check_regex(text: str) -> str:
    if _NOT_RE2.search(text):
        raise ValueError(f"regex {text!r} uses lookaround or backreferences, which RE2 and Kafka tools lack")
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"invalid regex {text!r}: {exc}") from exc
    return text


Duration = Annotated[
    str,
    StringConstraints(pattern=DURATION_PATTERN, min_length=2, max_length=32),
    AfterValidator(_check_duration),
    Field(description="Duration such as 90s, 15m, 1h30m or 7d (units d, h, m, s in that order)."),
]
Regex = Annotated[
    str,
    StringConstraints(pattern=REGEX_PATTERN, min_length=1, max_length=512),
    AfterValidator(_check_regex),
]
TopicName = Annotated[str, StringConstraints(pattern=TOPIC_NAME_PATTERN)]


class Model(BaseModel):
    """Base for every CRD part: camelCase aliases, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", use_enum_values=False
    )

    def to_k8s(self) -> dict[str, Any]:
        """The object as the API server stores it (camelCase, unset optionals left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def validated(*rules: Mapping[str, str]) -> ConfigDict:
    """A Model config whose schema carries CEL rules (x-kubernetes-validations) the API server enforces."""
    rule_list: list[JsonValue] = [dict(rule) for rule in rules]
    return ConfigDict(**Model.model_config, json_schema_extra={"x-kubernetes-validations": rule_list})


class SecretRef(Model):
    """A Secret in the object's namespace holding Kafka client properties (security.protocol, sasl.*)."""

    name: str = Field(min_length=1, max_length=253)


class ClusterRef(Model):
    """Which Kafka-protocol cluster to act on; absent means the operator's default cluster."""

    bootstrap_servers: str | None = Field(
        default=None, pattern=BOOTSTRAP_PATTERN, description="host:port[,host:port...]"
    )
    secret_ref: SecretRef | None = None


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Observed(Model):
    """Base for what the operator writes into status: fields it does not know (written by an older or
    newer operator) are ignored rather than refused, so a status always parses."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class Condition(Observed):
    """A metav1.Condition: one entry per type, reason for machines, message for humans."""

    type: str = Field(min_length=1, max_length=316)
    status: ConditionStatus
    reason: str = Field(pattern=REASON_PATTERN, max_length=1024)
    message: str = Field(default="", max_length=32768)
    last_transition_time: str | None = None
    observed_generation: int | None = Field(default=None, ge=0)


class Status(Observed):
    """What every kind's status starts with: the generation it reflects and conditions keyed by type."""

    observed_generation: int | None = None
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
) -> list[Condition]:
    """Return conditions with `type_` replaced; lastTransitionTime moves only when status changes
    (meta.SetStatusCondition semantics). A merge patch replaces the whole list, so we rebuild it."""
    old = next((c for c in conditions if c.type == type_), None)
    changed = old is None or old.status != status
    new = Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=now_rfc3339() if changed or old is None else old.last_transition_time,
        observed_generation=generation,
    )
    return [c for c in conditions if c.type != type_] + [new]


def find_condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


class TopicSelector(Model):
    """Topics matched by any `include` regex and no `exclude` regex (KIP-762's pattern list).
    Regexes match the whole topic name, as Kafka's pattern subscriptions do."""

    include: list[Regex] = Field(min_length=1, max_length=64)
    exclude: list[Regex] = Field(default_factory=list, max_length=64)

    def matches(self, topic: str) -> bool:
        return any(re.fullmatch(p, topic) for p in self.include) and not any(
            re.fullmatch(p, topic) for p in self.exclude
        )


class GroupSelector(Model):
    """Which consumer groups count for consumed retention (RetentionPolicy.spec.consumers)."""

    include: list[Regex] = Field(default_factory=lambda: [".*"], max_length=64)
    exclude: list[Regex] = Field(default_factory=list, max_length=64)
    required: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Groups that must have committed before anything is deleted.",
    )
    exclusive: bool = Field(
        default=False, description="Refuse topics read by groups outside include (KIP-762)."
    )
    inactive_after: Duration | None = Field(
        default=None,
        description="Ignore groups with no members and no commit for this long (Pulsar-style expiry).",
    )

    def counts(self, group: str) -> bool:
        return any(re.fullmatch(p, group) for p in self.include) and not any(
            re.fullmatch(p, group) for p in self.exclude
        )
