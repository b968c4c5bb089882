"""The grants of a KafkaCluster decide what a namespace may do; every refusal names the rule it broke."""

from __future__ import annotations

from typing import Any

import pytest

from ebb_operator.access import Access, Forbidden, access_for
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import DeleteRecordsSpec
from ebb_operator.models.kafka_cluster import Credentials, KafkaClusterSpec, Permission
from ebb_operator.models.retention_policy import RetentionPolicySpec

CLUSTER = KafkaClusterSpec.model_validate(
    {
        "bootstrapServers": "kafka:9092",
        "access": [
            {"namespaces": ["team-a"], "topics": ["orders.*"], "groups": ["a-.*"],
             "allow": ["ForcedRetention"], "forcedRetentionMinimum": "1d"},
            {"namespaceSelector": {"matchLabels": {"tier": "trusted"}}, "topics": ["audit"],
             "allow": ["GuardNone", "Compaction"]},
        ],
    }
)  # fmt: skip


def _dr(**extra: Any) -> DeleteRecordsSpec:
    return DeleteRecordsSpec.model_validate(
        {"partitions": [{"topic": "orders", "partition": 0, "offset": 5}], **extra}
    )


def _rp(**extra: Any) -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {"topics": {"include": ["orders.*"]}, "consumedRetention": "1h", **extra}
    )


def test_a_namespace_without_a_grant_is_forbidden_by_name() -> None:
    with pytest.raises(Forbidden, match="namespace team-b has no grant on KafkaCluster shared"):
        access_for("shared", CLUSTER, "team-b", {})


def test_grants_add_up_by_name_and_by_label() -> None:
    access = access_for("shared", CLUSTER, "team-a", {"tier": "trusted"})
    assert access.topics == ("orders.*", "audit")
    assert access.allow == {Permission.FORCED_RETENTION, Permission.GUARD_NONE, Permission.COMPACTION}
    assert access.groups is None, "one grant without groups: any group may be left out"
    assert access.forced_retention_minimum_ms == 86_400_000


def test_delete_records_outside_the_topics_or_with_guard_none_is_refused() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    access.check_delete_records(_dr())
    with pytest.raises(Forbidden, match=r"guard None needs GuardNone in the grant of namespace team-a"):
        access.check_delete_records(_dr(guard="None"))
    other = DeleteRecordsSpec.model_validate(
        {"partitions": [{"topic": "billing", "partition": 0, "offset": 1}]}
    )
    with pytest.raises(Forbidden, match=r"spec.partitions reaches 1 topic\(s\) outside the topics granted"):
        access.check_delete_records(other)


def test_refusals_count_foreign_topics_but_never_name_them() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    with pytest.raises(Forbidden) as err:
        access.check_topics(["orders", "billing-secret", "payroll"], "spec.topics")
    assert "2 topic(s)" in str(err.value) and "payroll" not in str(err.value)


def test_forced_retention_needs_the_grant_and_its_minimum() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    access.check_retention_policy(_rp(forcedRetention="2d"), ["orders"])
    with pytest.raises(Forbidden, match="shorter than the 86400s forcedRetentionMinimum"):
        access.check_retention_policy(_rp(forcedRetention="2h"), ["orders"])
    trusted = access_for("shared", CLUSTER, "ops", {"tier": "trusted"})
    with pytest.raises(Forbidden, match="forcedRetention needs ForcedRetention"):
        trusted.check_retention_policy(_rp(forcedRetention="2d"), [])


def test_compaction_needs_its_permission() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    cc = CompactionConfigSpec.model_validate({"topics": {"include": ["orders"]}})
    with pytest.raises(Forbidden, match="a CompactionConfig needs Compaction"):
        access.check_compaction(cc, ["orders"])


def _spark(**app: str) -> RetentionPolicySpec:
    return _rp(analysis={"engine": "SparkApplication", "sparkApplication": app})


def test_a_tenant_service_account_runs_only_with_the_clusters_analysis_credential() -> None:
    """SparkOverrides alone is not enough: the KafkaCluster must name a read-only analysis credential,
    which is all such a run gets."""
    access_for("shared", CLUSTER, "team-a", {}).check_retention_policy(_rp(), ["orders"])  # defaults: fine
    with pytest.raises(
        Forbidden, match=r"serviceAccount needs SparkOverrides in the grant of namespace team-a"
    ):
        access_for("shared", CLUSTER, "team-a", {}).check_retention_policy(_spark(serviceAccount="x"), [])
    grant = {"namespaces": ["team-a"], "topics": ["orders.*"], "allow": ["SparkOverrides"]}
    granted = KafkaClusterSpec.model_validate({"bootstrapServers": "kafka:9092", "access": [grant]})
    with pytest.raises(
        Forbidden, match=r"serviceAccount needs spec\.analysisCredentials on KafkaCluster shared: a run"
    ):
        access_for("shared", granted, "team-a", {}).check_retention_policy(_spark(serviceAccount="x"), [])
    analysis = granted.model_copy(
        update={"analysis_credentials": Credentials.model_validate({"secretRef": {"name": "describe-only"}})}
    )
    access_for("shared", analysis, "team-a", {}).check_retention_policy(_spark(serviceAccount="x"), [])


@pytest.mark.parametrize("access", [access_for("shared", CLUSTER, "team-a", {}), Access.inline("solo")])
def test_a_tenant_image_is_refused_whatever_the_grant(access: Access) -> None:
    """The jobs namespace is shared by every tenant's runs: only the operator's own code runs there."""
    with pytest.raises(Forbidden, match=r"sparkApplication\.image: SparkApplication runs use the operator's"):
        access.check_retention_policy(_spark(image="evil:1"), ["orders"])
    access.check_retention_policy(  # the engine Local ignores the field
        _rp(analysis={"engine": "Local", "sparkApplication": {"image": "evil:1"}}), ["orders"]
    )


def test_only_granted_groups_may_be_left_out() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    assert access.may_discount("a-reporting") and not access.may_discount("billing")


def test_an_inline_cluster_is_unrestricted() -> None:
    access = Access.inline("solo")
    access.check_delete_records(_dr(guard="None"))
    access.check_retention_policy(_rp(forcedRetention="1h"), ["anything"])
    assert access.may_discount("any-group")
