"""KIP-68's forced level: `forcedRetention` as `retention.ms` on every matched topic.

SET only where it differs. In a dry run nothing is written: the run reports what would be set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ebb_operator.handlers.compaction_config import same_value
from ebb_operator.handlers.errors import KafkaFailed
from ebb_operator.kafka import ClusterAdmin, KafkaFailure
from ebb_operator.models.common import duration_ms


@dataclass
class ForcedRetention:
    value: str  # retention.ms
    changes: list[str] = field(default_factory=list)  # topics set (or, in a dry run, that would be)

    def describe(self, dry_run: bool) -> str:
        verb = "would set" if dry_run else "set"
        return f"{verb} retention.ms={self.value} on {len(self.changes)} topic(s): {', '.join(self.changes)}"


def apply_forced_retention(
    admin: ClusterAdmin, topics: list[str], forced: str, *, dry_run: bool
) -> ForcedRetention:
    """Describe, then SET retention.ms where it differs (nothing in a dry run). Blocking (a worker thread)."""
    result = ForcedRetention(str(duration_ms(forced)))
    described = admin.topic_configs(topics)
    for topic in topics:
        found = described[topic]
        if found.error is not None:
            raise KafkaFailed(f"cannot describe {topic}: {found.error}")
        current = found.configs["retention.ms"].value if "retention.ms" in found.configs else None
        if not same_value("retention.ms", current, result.value):
            result.changes.append(topic)
    if dry_run or not result.changes:
        return result
    outcomes: dict[str, KafkaFailure | None] = admin.set_topic_configs(
        {t: {"retention.ms": result.value} for t in result.changes}
    )
    failed = sorted((t, f) for t, f in outcomes.items() if f is not None)
    if failed:
        raise KafkaFailed(f"cannot set retention.ms on {failed[0][0]}: {failed[0][1]}")
    return result
