"""The DeleteRecords model: defaults, camelCase, field-named refusals, phase from Ready."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ebb_operator.models.common import (
    ConditionStatus,
    set_condition,
)
from ebb_operator.models.delete_records import (
    DeleteRecordsSpec,
    Guard,
    Phase,
    phase_from_conditions,
)


def test_delete_records_defaults_and_camel_case() -> None:
    spec = DeleteRecordsSpec.model_validate(
        {
            "partitions": [{"topic": "orders", "partition": 0, "offset": -1}],
            "dryRun": True,
            "cluster": {"bootstrapServers": "a:9092,b:9093"},
        }
    )
    assert spec.guard is Guard.CONSUMED
    assert spec.timeout == "30s"
    assert spec.dry_run is True
    assert spec.to_k8s()["partitions"] == [{"topic": "orders", "partition": 0, "offset": -1}]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"partitions": []}, "partitions"),
        ({"partitions": [{"topic": "bad topic", "partition": 0, "offset": 1}]}, "topic"),
        ({"partitions": [{"topic": "t", "partition": -1, "offset": 1}]}, "partition"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": -2}]}, "offset"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "guard": "Maybe"}, "guard"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "timeout": "soon"}, "timeout"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "dryrun": True}, "dryrun"),
        (
            {
                "partitions": [{"topic": "t", "partition": 0, "offset": 1}],
                "cluster": {"bootstrapServers": "x"},
            },
            "bootstrapServers",
        ),
    ],
)
def test_bad_delete_records_specs_name_the_field(body: dict, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        DeleteRecordsSpec.model_validate(body)


def test_phase_is_derived_from_ready() -> None:
    assert phase_from_conditions([]) is Phase.PENDING
    running = set_condition([], "Ready", ConditionStatus.UNKNOWN, "Running", "deleting", 1)
    assert phase_from_conditions(running) is Phase.RUNNING
    done = set_condition(running, "Ready", ConditionStatus.TRUE, "Succeeded", "done", 1)
    assert phase_from_conditions(done) is Phase.SUCCEEDED
    partial = set_condition(running, "Ready", ConditionStatus.FALSE, "PartiallyFailed", "1 of 2", 1)
    assert phase_from_conditions(partial) is Phase.PARTIALLY_FAILED
    failed = set_condition(running, "Ready", ConditionStatus.FALSE, "GuardRefused", "group g", 1)
    assert phase_from_conditions(failed) is Phase.FAILED


def test_a_request_waiting_for_its_cluster_is_pending_not_failed() -> None:
    waiting = set_condition([], "Ready", ConditionStatus.FALSE, "ClusterNotFound", "no KafkaCluster x", 1)
    assert phase_from_conditions(waiting) is Phase.PENDING
