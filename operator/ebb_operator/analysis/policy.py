"""The job's view of a RetentionPolicy: a small typed structure, mapped from the CRD model (README).

The object is validated by the same pydantic model the operator and the CRD schema use, so a policy the
API server accepted parses here, and a hand-written `--policy-file` gets the same clear errors. The job
keeps its own flat structure so a benchmark or a test can build one without a Kubernetes object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from ebb_operator.models.common import duration_ms, parse_quantity
from ebb_operator.models.retention_policy import BudgetAction, OffsetsSource, RetentionPolicySpec
from ebb_operator.models.run import RunRequest


class PolicyError(ValueError):
    """The policy cannot be analysed as written; the message says which field and why."""


@dataclass(frozen=True)
class BudgetRule:
    """spec.budget in the job's units (docs/analysis.md, "The budget")."""

    max_bytes: int | None  # per partition, on its largest replica
    max_age_ms: int | None
    action: BudgetAction = BudgetAction.ALERT


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
    # Groups the policy may leave out (its namespace's KafkaCluster grant); None: any group. A group
    # outside these always counts, whatever include, exclude and inactiveAfter say.
    discountable_groups: tuple[str, ...] | None = None
    offsets_source: OffsetsSource = OffsetsSource.ADMIN_API
    budget: BudgetRule | None = None

    @classmethod
    def from_request(cls, request: RunRequest) -> AnalysisPolicy:
        """The policy of a run the operator requested (spec already validated, grant already applied)."""
        policy = cls.from_spec(
            request.policy.namespace, request.policy.name, request.policy.uid, request.spec
        )
        groups = request.discountable_groups
        return replace(policy, discountable_groups=tuple(groups) if groups is not None else None)

    @classmethod
    def from_spec(
        cls, namespace: str, name: str, uid: str | None, spec: RetentionPolicySpec
    ) -> AnalysisPolicy:
        consumers = spec.consumers
        budget = None
        if spec.budget is not None:
            size, age = spec.budget.max_bytes_per_partition, spec.budget.max_age
            budget = BudgetRule(
                max_bytes=parse_quantity(size) if size else None,
                max_age_ms=duration_ms(age) if age else None,
                action=spec.budget.action,
            )
        return cls(
            namespace=namespace,
            name=name,
            uid=uid,
            consumed_retention_ms=duration_ms(spec.consumed_retention),
            topics_include=tuple(spec.topics.include),
            topics_exclude=tuple(spec.topics.exclude),
            groups_include=tuple(consumers.include),
            groups_exclude=tuple(consumers.exclude),
            required=tuple(consumers.required),
            exclusive=consumers.exclusive,
            inactive_after_ms=duration_ms(consumers.inactive_after) if consumers.inactive_after else None,
            dry_run=spec.dry_run,
            offsets_source=spec.analysis.offsets_source,
            budget=budget,
        )

    @classmethod
    def from_resource(cls, obj: Mapping[str, Any]) -> AnalysisPolicy:
        """Map a RetentionPolicy object (as the API server returns it, or a YAML file) to the job's inputs."""
        meta = obj.get("metadata") or {}
        if obj.get("kind", "RetentionPolicy") != "RetentionPolicy":
            raise PolicyError(f"expected a RetentionPolicy, got kind {obj.get('kind')!r}")
        if not meta.get("name"):
            raise PolicyError("metadata.name: missing")
        try:
            spec = RetentionPolicySpec.model_validate(obj.get("spec") or {})
        except ValidationError as e:
            raise PolicyError(f"spec of RetentionPolicy {meta.get('name')}: {e}") from e
        return cls.from_spec(
            str(meta.get("namespace") or "default"), str(meta["name"]), meta.get("uid"), spec
        )
