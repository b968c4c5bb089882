"""What a kind contributes to its CRD beyond the schema: names, printer columns, the models."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class CrdInfo:
    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[PrinterColumn, ...] = field(default_factory=tuple)
    scope: str = "Namespaced"  # or "Cluster"
    # `kubectl get ebb` lists the tenant kinds; KafkaCluster, which tenants cannot read, is `ebb-admin`.
    categories: tuple[str, ...] = ("ebb",)

    @property
    def singular(self) -> str:
        return self.kind.lower()


def ready_column() -> PrinterColumn:
    """Ready read from the conditions, as Strimzi's printer columns do."""
    return PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status')


def age_column() -> PrinterColumn:
    return PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def condition_columns() -> tuple[PrinterColumn, ...]:
    """Why the object is (not) Ready, at `kubectl get -o wide`."""
    ready = '.status.conditions[?(@.type=="Ready")]'
    return (
        PrinterColumn("Reason", "string", f"{ready}.reason", "Why, in one word", priority=1),
        PrinterColumn("Message", "string", f"{ready}.message", "Why, for humans", priority=1),
    )
