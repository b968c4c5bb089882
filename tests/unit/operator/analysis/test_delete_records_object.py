"""The DeleteRecords object the analysis job creates: owned by the policy, guard None, dryRun copied."""

from __future__ import annotations

import dataclasses

from ebb_operator.analysis.__main__ import delete_records_object
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.models.delete_records import DeleteRecordsSpec, PartitionOffset

POLICY = AnalysisPolicy(
    namespace="ns", name="orders", uid="u-1", consumed_retention_ms=1, topics_include=("o",)
)


def test_object_is_owned_by_the_policy_and_parses_as_the_crd_model() -> None:
    deletes = [PartitionOffset(topic="o", partition=0, offset=6)]
    body = delete_records_object(POLICY, "r1", deletes, {"bootstrapServers": "k:9092"})
    assert body["metadata"]["name"] == "orders-r1" and body["metadata"]["namespace"] == "ns"
    (owner,) = body["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "RetentionPolicy",
        "orders",
        "u-1",
        True,
    )
    spec = DeleteRecordsSpec.model_validate(body["spec"])
    assert [(p.topic, p.partition, p.offset) for p in spec.partitions] == [("o", 0, 6)]
    assert (spec.guard.value, spec.dry_run) == ("None", False)


def test_dry_run_policy_creates_a_dry_run_delete_records() -> None:
    body = delete_records_object(
        dataclasses.replace(POLICY, dry_run=True),
        "r2",
        [PartitionOffset(topic="o", partition=0, offset=6)],
        None,
    )
    assert body["spec"]["dryRun"] is True
