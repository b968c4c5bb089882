"""The client quota configs (KIP-546): which entity has which quota, validated as Kafka's controller
validates them, kept in ``<data_dir>/client-quotas.json``.

An entity is a set of (entity type, name) pairs, a name of None meaning the default of that type:
``user`` (the principal's name), ``client-id``, or both (KIP-55); ``ip`` (KIP-612) alone. Its quotas are
keys with positive values. This module holds the configs and answers DescribeClientQuotas filters;
``manager.py`` turns them into throttling.

Served: ``producer_byte_rate`` and ``consumer_byte_rate`` (bytes per second, whole numbers), on user,
client-id and user + client-id entities and their defaults. Kafka's other keys are refused with a message
naming them (``request_percentage``, ``controller_mutation_rate``, and every ``ip`` entity with its
``connection_creation_rate``): ebb-broker does not enforce them, and storing a quota nobody enforces would
be a silent lie.

The file is written atomically (tmp, fsync, rename, directory fsync) before an AlterClientQuotas is
answered and read on start; a file that cannot be read stops the start rather than losing quotas.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ebb_broker.log.checkpoint import atomic_write

log = logging.getLogger(__name__)

FILE_NAME = "client-quotas.json"
_VERSION = 1

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# Kafka's QuotaConfig.userAndClientQuotaConfigs: key -> whether the value must be a whole number (LONG).
_USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}
ENFORCED_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE})
LONG_MAX = 2**63 - 1
# Kafka's controller refuses an operation of more than 10,000 records (MAX_RECORDS_PER_USER_OP).
MAX_OPS_PER_REQUEST = 10_000

INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]
"""(entity type, name or None for the default) pairs, sorted by type: one canonical form per entity."""


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The canonical entity of a request's pairs; a type given twice keeps its last name, as Kafka's map."""
    return tuple(sorted(dict(pairs).items()))


def describe_entity(entity: Entity) -> str:
    """Kafka's ClientQuotaEntity.toString, for error messages."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


class CorruptQuotaFileError(ValueError):
    """``client-quotas.json`` cannot be read; the broker refuses to start rather than drop quotas."""


class QuotaFilterError(Exception):
    """A DescribeClientQuotas filter Kafka refuses (the whole request fails with ``code``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class QuotaOp:
    """One AlterClientQuotas op: set ``key`` to ``value``, or remove it."""

    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True)
class Alteration:
    """The ops of one entity in an AlterClientQuotas request."""

    entity: Entity
    ops: Sequence[QuotaOp]


@dataclass(frozen=True)
class AlterResult:
    entity: Entity
    error_code: int = 0
    error_message: str | None = None


@dataclass
class ClientQuotaStore:
    """Every entity's quotas; ``generation`` grows with each change, so users of the configs (the quota
    managers) know when to look again."""

    path: Path
    quotas: dict[Entity, dict[str, float]] = field(default_factory=dict)
    generation: int = 0

    @classmethod
    def open(cls, data_dir: Path) -> ClientQuotaStore:
        store = cls(Path(data_dir) / FILE_NAME)
        if store.path.exists():
            store.quotas = _read(store.path)
        return store

    def quotas_of(self, key: str) -> dict[Entity, float]:
        """Every entity with a value for ``key``."""
        return {e: q[key] for e, q in self.quotas.items() if key in q}

    # -- AlterClientQuotas --------------------------------------------------------------------------------

    def plan(
        self, alterations: Sequence[Alteration]
    ) -> tuple[list[AlterResult], dict[Entity, dict[str, float]] | None]:
        """Validate each entity's ops as Kafka's ClientQuotaControlManager does: the result per distinct
        entity, in request order, and the quotas once the valid entities' ops (all of an entity's ops or
        none) are applied (None when nothing changes). Changes nothing itself."""
        if sum(len(a.ops) for a in alterations) > MAX_OPS_PER_REQUEST:
            message = f"at most {MAX_OPS_PER_REQUEST} quota changes may be made in one request"
            entities = dict.fromkeys(a.entity for a in alterations)
            return [AlterResult(e, INVALID_REQUEST, message) for e in entities], None
        seen: dict[Entity, int] = {}
        for a in alterations:
            seen[a.entity] = seen.get(a.entity, 0) + 1
        results: list[AlterResult] = []
        answered: set[Entity] = set()
        changed: dict[Entity, dict[str, float]] = {}
        for a in alterations:
            if a.entity in answered:
                continue
            answered.add(a.entity)
            keys = [op.key for op in a.ops]
            if seen[a.entity] > 1 or len(set(keys)) != len(keys):
                # Kafka reports a repeated key or entity this way (and applies the first one regardless;
                # here neither is applied, so the answer is the truth).
                message = f"Ignoring duplicate entity {describe_entity(a.entity)}"
                results.append(AlterResult(a.entity, INVALID_REQUEST, message))
                continue
            error = _check_entity(a.entity) or next(
                (msg for op in a.ops if not op.remove and (msg := _check_value(op.key, op.value))), None
            )
            if error is not None:
                results.append(AlterResult(a.entity, INVALID_REQUEST, error))
                continue
            new = dict(self.quotas.get(a.entity, {}))
            for op in a.ops:
                if op.remove:
                    new.pop(op.key, None)
                else:
                    new[op.key] = float(op.value)
            if new != self.quotas.get(a.entity, {}):
                changed[a.entity] = new
            results.append(AlterResult(a.entity))
        if not changed:
            return results, None
        return results, {e: q for e, q in {**self.quotas, **changed}.items() if q}

    def write(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Persist ``quotas`` (file I/O only: may run in a worker thread)."""
        doc = {
            "version": _VERSION,
            "entities": [
                {"entity": dict(entity), "quotas": dict(sorted(q.items()))}
                for entity, q in sorted(quotas.items(), key=repr)
            ],
        }
        atomic_write(self.path, (json.dumps(doc, indent=1) + "\n").encode())

    def apply(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """Make ``quotas`` (from ``plan``, written by ``write``) the configs in force."""
        for entity in set(self.quotas) | set(quotas):
            if self.quotas.get(entity) != quotas.get(entity):
                log.info("client quotas of %s: %s", describe_entity(entity), quotas.get(entity, "none"))
        self.quotas = quotas
        self.generation += 1

    def alter(self, alterations: Sequence[Alteration], *, validate_only: bool = False) -> list[AlterResult]:
        """``plan``, then (unless ``validate_only``) ``write`` and ``apply`` what changed."""
        results, quotas = self.plan(alterations)
        if quotas is not None and not validate_only:
            self.write(quotas)
            self.apply(quotas)
        return results

    # -- DescribeClientQuotas -----------------------------------------------------------------------------

    def describe(
        self, components: Sequence[tuple[str, int, str | None]], *, strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a filter matches, as Kafka's ClientQuotasImage.describe: each component names an
        entity type and matches an exact name (0), the default (1) or any entity of that type (2); with
        ``strict`` an entity may have no other types. Raises QuotaFilterError as Kafka fails the request."""
        exact: dict[str, str | None] = {}
        of_type: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise QuotaFilterError(INVALID_REQUEST, "Invalid empty entity type.")
            if entity_type in exact or entity_type in of_type:
                raise QuotaFilterError(
                    INVALID_REQUEST, f"Entity type {entity_type} cannot appear more than once in the filter."
                )
            if entity_type not in ENTITY_TYPES:
                raise QuotaFilterError(UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaFilterError(
                        INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."
                    )
                exact[entity_type] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaFilterError(
                        INVALID_REQUEST,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    )
                exact[entity_type] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaFilterError(
                        INVALID_REQUEST,
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                    )
                of_type.add(entity_type)
            else:
                raise QuotaFilterError(INVALID_REQUEST, f"Unknown match type {match_type}")
        types = set(exact) | of_type
        if IP in types and types & {USER, CLIENT_ID}:
            raise QuotaFilterError(
                INVALID_REQUEST,
                "Invalid entity filter component combination. IP filter component should not be used "
                "with user or clientId filter component.",
            )
        out = []
        for entity, quotas in self.quotas.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(of_type):
                continue
            if all(t in names and names[t] == n for t, n in exact.items()) and of_type <= names.keys():
                out.append((entity, dict(quotas)))
        return out


def _check_entity(entity: Entity) -> str | None:
    """Kafka's validateEntity and configKeysForEntityType, then what ebb-broker does not enforce."""
    if not entity:
        return "Invalid empty client quota entity"
    for entity_type, name in entity:
        if entity_type not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {entity_type}"
        if name == "":
            return f"Empty {entity_type} not supported"
    types = {t for t, _ in entity}
    if IP in types:
        if types & {USER, CLIENT_ID}:
            return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
        return (
            f"ebb-broker does not enforce IP quotas ({CONNECTION_CREATION_RATE}, KIP-612); "
            "max.connections.per.ip limits connections per address"
        )
    return None


def _check_value(key: str, value: float) -> str | None:
    """Kafka's validateQuotaKeyValue, then what ebb-broker does not enforce (None: the value is served)."""
    whole = _USER_CLIENT_KEYS.get(key)
    if whole is None:
        return f"Invalid configuration key {key}"
    if not math.isfinite(value):
        return f"Quota {key} must be a finite number"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if whole:
        if value > LONG_MAX:
            return f"Proposed value for {key} is too large for a LONG."
        if abs(value % 1.0) > 1e-6:
            return f"{key} cannot be a fractional value."
    if key not in ENFORCED_KEYS:
        return f"ebb-broker does not enforce {key}; it serves " + " and ".join(sorted(ENFORCED_KEYS))
    return None


def _read(path: Path) -> dict[Entity, dict[str, float]]:
    try:
        doc: Any = json.loads(path.read_text())
        if not isinstance(doc, dict) or doc.get("version") != _VERSION:
            raise ValueError(f"unknown version {doc.get('version') if isinstance(doc, dict) else doc!r}")
        out: dict[Entity, dict[str, float]] = {}
        for item in doc["entities"]:
            entity = entity_of((str(t), None if n is None else str(n)) for t, n in item["entity"].items())
            quotas = {str(k): float(v) for k, v in item["quotas"].items()}
            problem = _check_entity(entity) or next(
                (msg for k, v in quotas.items() if (msg := _check_value(k, v))), None
            )
            if problem is not None or not quotas:
                raise ValueError(f"{describe_entity(entity)}: {problem or 'no quotas'}")
            out[entity] = quotas
        return out
    except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise CorruptQuotaFileError(f"{path}: not a client quota file: {exc}") from None
