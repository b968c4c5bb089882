"""Types every Ebb kind shares: cluster reference, conditions, durations, topic and group selectors.

Field names are camelCase on the wire (Kubernetes convention) and snake_case in Python; every model
parses with either. Specs forbid unknown fields so a misspelt key is an error, never silently ignored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

import re2
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel
from pydantic.config import JsonValue

from ebb_operator.models.messages import CONDITION_MESSAGE

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
# Regexes in selectors run with RE2 semantics (linear time whatever the pattern, so no pattern can
# freeze the operator: `(a+)+b` costs no more than `ab`), whole-name matches, at most REGEX_MAX_LENGTH
# characters and no whitespace. RE2 refuses lookaround and backreferences.
REGEX_PATTERN = r"^[^\s]+$"
REGEX_MAX_LENGTH = 256
# Byte quantities as Kubernetes writes them: a positive whole number, optionally with a binary (Ki, Mi, Gi,
# Ti, Pi) or decimal (k, M, G, T, P) suffix, e.g. "20Gi", "500M", "1048576".
QUANTITY_PATTERN = r"^[1-9][0-9]*(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$"
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
_QUANTITY_UNITS: dict[str, int] = {
    **{u: 1024**i for i, u in enumerate(("", "Ki", "Mi", "Gi", "Ti", "Pi"))},
    **{u: 1000**i for i, u in enumerate(("k", "M", "G", "T", "P"), start=1)},
}


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


def parse_quantity(text: str) -> int:
    """Bytes of a quantity ("20Gi" -> 21474836480); raises ValueError with the accepted form on bad input."""
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise ValueError(
            f"invalid quantity {text!r}: a positive whole number with an optional suffix Ki, Mi, Gi, Ti, Pi "
            "(powers of 1024) or k, M, G, T, P (powers of 1000), e.g. 20Gi"
        )
    unit = match.group(1) or ""
    return int(text[: len(text) - len(unit)]) * _QUANTITY_UNITS[unit]


def _check_quantity(text: str) -> str:
    parse_quantity(text)
    return text


def _check_duration(text: str) -> str:
    parse_duration(text)
    return text


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to the operator's stderr
    return options


_RE2_OPTIONS = _re2_options()


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The RE2 program of a pattern (cached: every reconcile matches the same few patterns)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def full_match(pattern: str, text: str) -> bool:
    return compiled(pattern).fullmatch(text) is not None


def _check_regex(text: str) -> str:
    try:
        compiled(text)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        # RE2 says what is wrong, then where: "missing ): orders(", "invalid perl operator: (?=".
        problem, _, where = detail.partition(": ")
        raise ValueError(
            f"not a valid RE2 regex: {problem}{f' in {where!r}' if where else ''}; rule: RE2 syntax "
            "(no lookaround or backreferences), matching whole names"
        ) from None
    return text


Duration = Annotated[
    str,
    StringConstraints(pattern=DURATION_PATTERN, min_length=2, max_length=32),
    AfterValidator(_check_duration),
    Field(description="Duration such as 90s, 15m, 1h30m or 7d (units d, h, m, s in that order)."),
]
Regex = Annotated[
    str,
    StringConstraints(pattern=REGEX_PATTERN, min_length=1, max_length=REGEX_MAX_LENGTH),
    AfterValidator(_check_regex),
    Field(description="An RE2 regular expression matching whole names (at most 256 characters)."),
]
Quantity = Annotated[
    str,
    StringConstraints(pattern=QUANTITY_PATTERN, max_length=32),
    AfterValidator(_check_quantity),
    Field(
        description="Bytes, such as 20Gi, 512Mi or 1000000 (suffixes Ki, Mi, Gi, Ti, Pi or k, M, G, T, P)."
    ),
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


def cel_rules(*rules: Mapping[str, str]) -> dict[str, JsonValue]:
    """Schema extras carrying CEL rules (x-kubernetes-validations) the API server enforces."""
    rule_list: list[JsonValue] = [dict(rule) for rule in rules]
    return {"x-kubernetes-validations": rule_list}


def validated(*rules: Mapping[str, str]) -> ConfigDict:
    """A Model config whose schema carries CEL rules (x-kubernetes-validations) the API server enforces."""
    return ConfigDict(**Model.model_config, json_schema_extra=cel_rules(*rules))


class SecretRef(Model):
    """A Secret holding Kafka client properties (security.protocol, sasl.*, ssl.*.pem)."""

    name: str = Field(min_length=1, max_length=253, description="Name of the Secret.")


class ClusterRef(Model):
    """An inline cluster (`spec.cluster`): only where the operator allows inline clusters
    (single-team installs); the Secret is read from the object's own namespace."""

    bootstrap_servers: str | None = Field(
        default=None, pattern=BOOTSTRAP_PATTERN, description="host:port[,host:port...]"
    )
    secret_ref: SecretRef | None = Field(
        default=None, description="A Secret in the object's own namespace with the client properties."
    )


class KafkaClusterRef(Model):
    """`spec.clusterRef`: the KafkaCluster (cluster-scoped, admin-owned) to act on; its grants decide what
    this namespace may do there. Absent (and no spec.cluster): the operator's default KafkaCluster."""

    name: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="Name of the KafkaCluster (kubectl get kafkaclusters, asked of a cluster admin).",
    )


# The spec rule every tenant kind carries: one way to name a cluster.
ONE_CLUSTER_RULE = {
    "rule": "!(has(self.cluster) && has(self.clusterRef))",
    "message": "name the cluster either with clusterRef (a KafkaCluster) or inline with cluster, not both",
}


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

    type: str = Field(
        min_length=1, max_length=316, description="Ready on every kind, or a kind's own (TopicsMatched)."
    )
    status: ConditionStatus = Field(description="True, False or Unknown (still working).")
    reason: str = Field(
        pattern=REASON_PATTERN, max_length=1024, description="Why, in one CamelCase word (for machines)."
    )
    message: str = Field(default="", max_length=CONDITION_MESSAGE, description="Why, for humans.")
    last_transition_time: str | None = Field(default=None, description="When status last changed.")
    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the condition was computed for."
    )


class Status(Observed):
    """What every kind's status starts with: the generation it reflects and conditions keyed by type."""

    observed_generation: int | None = Field(
        default=None, description="The metadata.generation this status reflects."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="The Ready condition (reason and message say why), and kind-specific ones.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(ms: int) -> str:
    """A time in ms since the epoch (a Kafka record timestamp, a run's now) as status writes times."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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

    include: list[Regex] = Field(
        min_length=1, max_length=64, description="Topics matching any of these RE2 regexes (whole names)."
    )
    exclude: list[Regex] = Field(
        default_factory=list, max_length=64, description="Minus topics matching any of these."
    )

    def matches(self, topic: str) -> bool:
        return any(full_match(p, topic) for p in self.include) and not any(
            full_match(p, topic) for p in self.exclude
        )

    def select(self, topics: Iterable[str]) -> list[str]:
        """The matching topics, sorted. Handlers run it in a worker thread: RE2 is linear, but thousands
        of topics times 64 patterns still do not belong on the event loop every object shares."""
        return sorted(t for t in topics if self.matches(t))


class GroupSelector(Model):
    """Which consumer groups count for consumed retention (RetentionPolicy.spec.consumers)."""

    include: list[Regex] = Field(
        default_factory=lambda: [".*"],
        max_length=64,
        description="Groups that count: those matching any of these RE2 regexes (default: every group).",
    )
    exclude: list[Regex] = Field(
        default_factory=list, max_length=64, description="Minus groups matching any of these."
    )
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
        return any(full_match(p, group) for p in self.include) and not any(
            full_match(p, group) for p in self.exclude
        )
