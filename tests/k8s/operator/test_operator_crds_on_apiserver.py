"""The CRDs install on a real kube-apiserver, and it refuses invalid objects with a readable message."""

from __future__ import annotations

import pytest

from tests.k8s.operator.operator_k8s import Objects

GOOD_DR = {"partitions": [{"topic": "orders", "partition": 0, "offset": 5}]}


def test_short_names_and_printer_columns_are_served(objects: Objects, ebb_crds: None) -> None:
    assert objects.apply("DeleteRecords", "columns", GOOD_DR).returncode == 0
    out = objects.cp.kubectl("get", "dr", "-n", objects.namespace).stdout
    assert out.split()[:5] == ["NAME", "PHASE", "PARTITIONS", "DELETED", "AGE"]
    for short in ("cc", "rp"):
        assert objects.cp.kubectl("get", short, "-n", objects.namespace).returncode == 0


@pytest.mark.parametrize(
    ("kind", "spec", "message"),
    [
        (
            "DeleteRecords",
            {"partitions": [{"topic": "t", "partition": 0, "offset": -5}]},
            "should be greater than or equal to -1",
        ),
        (
            "DeleteRecords",
            {"partitions": [{"topic": "bad topic!", "partition": 0, "offset": 1}]},
            "spec.partitions[0].topic",
        ),
        (
            "DeleteRecords",
            {
                "partitions": [
                    {"topic": "t", "partition": 0, "offset": 1},
                    {"topic": "t", "partition": 0, "offset": 2},
                ]
            },
            "Duplicate value",
        ),
        (
            "DeleteRecords",
            {"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "guard": "Maybe"},
            'supported values: "Consumed", "ConsumedBy", "None"',
        ),
        (
            "DeleteRecords",
            {"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "timeout": "soon"},
            "spec.timeout",
        ),
        (
            "RetentionPolicy",
            {"topics": {"include": ["t"]}, "consumedRetention": "7d", "forcedRetention": "1d"},
            "forcedRetention must not be shorter than consumedRetention",
        ),
        (
            "RetentionPolicy",
            {"topics": {"include": ["t"]}, "consumedRetention": "1w"},
            "spec.consumedRetention",
        ),
        ("CompactionConfig", {"topics": {"include": ["t"]}, "cleanupPolicy": "delete"}, "spec.cleanupPolicy"),
        (
            "CompactionConfig",
            {"topics": {"include": ["t"]}, "minCompactionLag": "2h", "maxCompactionLag": "90m"},
            "maxCompactionLag must not be shorter than minCompactionLag",
        ),
    ],
)
def test_invalid_objects_are_rejected_with_a_readable_message(
    objects: Objects, ebb_crds: None, kind: str, spec: dict, message: str
) -> None:
    result = objects.apply(kind, "invalid", spec)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_retention_order_accepts_days_against_hours(objects: Objects, ebb_crds: None) -> None:
    spec = {"topics": {"include": ["t"]}, "consumedRetention": "36h", "forcedRetention": "2d"}
    result = objects.apply("RetentionPolicy", "days-vs-hours", spec)
    assert result.returncode == 0, result.stderr


def test_unknown_fields_are_rejected(objects: Objects, ebb_crds: None) -> None:
    result = objects.apply("DeleteRecords", "typo", {**GOOD_DR, "dryrun": True})
    assert result.returncode != 0 and 'unknown field "spec.dryrun"' in result.stderr, result.stderr


def test_delete_records_spec_is_immutable(objects: Objects, ebb_crds: None) -> None:
    assert objects.apply("DeleteRecords", "frozen", GOOD_DR).returncode == 0
    changed = {"partitions": [{"topic": "orders", "partition": 0, "offset": 9}]}
    result = objects.apply("DeleteRecords", "frozen", changed)
    assert result.returncode != 0
    assert "spec is immutable: create a new DeleteRecords" in result.stderr, result.stderr
