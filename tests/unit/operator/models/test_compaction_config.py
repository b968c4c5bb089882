"""The CompactionConfig model maps to Kafka topic configs and refuses what Kafka would."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ebb_operator.models.compaction_config import CompactionConfigSpec


def test_compaction_config_maps_to_kafka_topic_configs() -> None:
    spec = CompactionConfigSpec.model_validate(
        {
            "topics": {"include": ["state-.*"]},
            "cleanupPolicy": "compact,delete",
            "minCompactionLag": "1h",
            "maxCompactionLag": "1d",
            "tombstones": {"retention": "10m", "nullValueIsTombstone": False},
            "minCleanableDirtyRatio": 0.3,
        }
    )
    assert spec.topic_configs() == {
        "cleanup.policy": "compact,delete",
        "min.compaction.lag.ms": "3600000",
        "max.compaction.lag.ms": "86400000",
        "delete.retention.ms": "600000",
        "tombstone.null.value.enable": "false",
        "min.cleanable.dirty.ratio": "0.3",
    }
    assert CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}}).topic_configs() == {
        "cleanup.policy": "compact"
    }


def test_compaction_config_refuses_unknown_policy_and_ratio_out_of_range() -> None:
    with pytest.raises(ValidationError, match="cleanupPolicy"):
        CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}, "cleanupPolicy": "delete"})
    with pytest.raises(ValidationError, match="minCleanableDirtyRatio"):
        CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}, "minCleanableDirtyRatio": 1.5})
