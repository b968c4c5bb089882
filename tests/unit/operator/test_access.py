"""The grants of a KafkaCluster decide what a namespace may do; every refusal names the rule it broke."""

from __future__ import annotations

import re
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
    with pytest.raises(Forbidden, match=r"^spec.clusterRef.name 'shared': namespace team-b has no grant"):
        access_for("shared", CLUSTER, "team-b", {}, "spec.clusterRef.name")


def test_grants_add_up_by_name_and_by_label() -> None:
    access = access_for("shared", CLUSTER, "team-a", {"tier": "trusted"})
    assert access.topics == ("orders.*", "audit")
    assert access.allow == {Permission.FORCED_RETENTION, Permission.GUARD_NONE, Permission.COMPACTION}
    assert access.groups is None, "one grant without groups: any group may be left out"
    assert access.forced_retention_minimum_ms == 86_400_000


def test_delete_records_outside_the_topics_or_with_guard_none_is_refused_naming_field_and_rule() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    access.check_delete_records(_dr())
    with pytest.raises(
        Forbidden,
        match=r"^spec.guard 'None' needs GuardNone in the grant of namespace team-a on KafkaCluster shared "
        r"\(spec.access\[\].allow\)$",
    ):
        access.check_delete_records(_dr(guard="None"))


def test_a_delete_records_refusal_names_the_topics_the_tenant_wrote() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    other = DeleteRecordsSpec.model_validate(
        {"partitions": [{"topic": t, "partition": p, "offset": 1}
                        for t, p in [("orders", 0), ("billing", 0), ("billing", 1), ("payroll", 0)]]}
    )  # fmt: skip
    with pytest.raises(Forbidden) as err:
        access.check_delete_records(other)
    assert str(err.value) == (
        "spec.partitions[1].topic 'billing' (and 1 more: payroll): outside the topics granted to namespace "
        "team-a on KafkaCluster shared (orders.*; spec.access[].topics)"
    )


def test_refusals_count_topics_a_pattern_reached_but_never_name_them() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    with pytest.raises(Forbidden, match=r"2 topic\(s\)") as err:
        access.check_topics(["orders", "billing-secret", "payroll"], "spec.topics")
    assert "payroll" not in str(err.value) and "billing" not in str(err.value)


@pytest.mark.parametrize(
    ("include", "refused"),
    [
        (["billing"], "spec.topics.include[0] 'billing'"),
        (["orders-eu", r"billing\.eu"], "spec.topics.include[1] 'billing.eu'"),
        (["billing.*"], None),  # a real pattern: checked against the topics it matches on the cluster
        (["orders-eu"], None),
    ],
)
def test_a_pattern_that_spells_out_one_topic_is_checked_before_the_topic_exists(
    include: list[str], refused: str | None
) -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    spec = _rp(topics={"include": include})
    if refused is None:
        access.check_retention_policy(spec)
        return
    with pytest.raises(Forbidden, match=rf"^{re.escape(refused)}: outside the topics granted"):
        access.check_retention_policy(spec)
    with pytest.raises(Forbidden, match=re.escape(refused)):  # the reconciler decides the same
        access.check_retention_policy(spec, ["orders-eu"])


def test_a_pattern_excluded_by_its_own_selector_names_nothing() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    access.check_retention_policy(_rp(topics={"include": ["orders.*", "billing"], "exclude": ["billing"]}))


def test_forced_retention_needs_the_grant_and_its_minimum() -> None:
    access = access_for("shared", CLUSTER, "team-a", {})
    access.check_retention_policy(_rp(forcedRetention="2d"), ["orders"])
    with pytest.raises(Forbidden, match="shorter than the 86400s forcedRetentionMinimum"):
        access.check_retention_policy(_rp(forcedRetention="2h"), ["orders"])
    trusted = access_for("shared", CLUSTER, "ops", {"tier": "trusted"})
    with pytest.raises(Forbidden, match=r"spec.forcedRetention '2d' needs ForcedRetention"):
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


def _budget(**budget: Any) -> RetentionPolicySpec:
    return _rp(budget={"maxBytesPerPartition": "20Gi", **budget})


THROTTLING = KafkaClusterSpec.model_validate(
    {
        "bootstrapServers": "kafka:9092",
        "access": [
            {"namespaces": ["team-a"], "topics": ["orders.*"], "allow": ["Budget"],
             "throttleClientIds": ["orders-.*"]},
            {"namespaces": ["team-a"], "topics": ["orders.*"], "allow": ["Evict"],
             "throttleUsers": ["svc-a"]},
            {"namespaces": ["team-b"], "topics": ["billing"], "allow": ["Budget"]},
        ],
    }
)  # fmt: skip
THROTTLE = {"action": "ThrottleProducers", "throttle": {"producerByteRate": "1Mi"}}


def test_a_budget_needs_budget_and_eviction_also_evict() -> None:
    plain = access_for("shared", CLUSTER, "team-a", {})
    with pytest.raises(Forbidden, match=r"^spec.budget needs Budget in the grant of namespace team-a"):
        plain.check_retention_policy(_budget(), ["orders"])
    only_budget = access_for("shared", THROTTLING, "team-b", {})
    only_budget.check_retention_policy(_rp(topics={"include": ["billing"]}, budget={"maxAge": "3d"}))
    with pytest.raises(Forbidden, match=r"spec.budget.action 'EvictSlowest' needs Evict in the grant"):
        only_budget.check_retention_policy(_budget(action="EvictSlowest"))
    access_for("shared", THROTTLING, "team-a", {}).check_retention_policy(_budget(action="EvictSlowest"))


@pytest.mark.parametrize(
    ("producer", "refusal"),
    [
        ({"clientId": "orders-writer"}, None),
        ({"user": "svc-a"}, None),
        ({"user": "svc-a", "clientId": "orders-1"}, None),
        (
            {"clientId": "billing-writer"},
            r"spec.budget.throttle.producers\[0\].clientId 'billing-writer': outside the clientIds namespace "
            r"team-a on KafkaCluster shared may throttle \(orders-.\*; spec.access\[\].throttleClientIds\)",
        ),
        ({"user": "svc-a", "clientId": "other"}, r"producers\[0\].clientId 'other': outside"),
        ({"user": "svc-b"}, r"producers\[0\].user 'svc-b': outside the users .* \(svc-a; .*throttleUsers\)"),
    ],
)
def test_throttle_producers_reaches_only_the_client_ids_and_users_the_grant_names(
    producer: dict[str, str], refusal: str | None
) -> None:
    access = access_for("shared", THROTTLING, "team-a", {})
    spec = _budget(**THROTTLE | {"throttle": {"producerByteRate": "1Mi", "producers": [producer]}})
    if refusal is None:
        access.check_retention_policy(spec)
    else:
        with pytest.raises(Forbidden, match=refusal):
            access.check_retention_policy(spec)
    nobody = access_for("shared", THROTTLING, "team-b", {})  # a grant without throttle lists throttles no one
    with pytest.raises(Forbidden, match=r"\(none; spec.access\[\].throttle"):
        nobody.check_retention_policy(
            spec.model_copy(update={"topics": _rp(topics={"include": ["billing"]}).topics})
        )


def test_a_delete_records_that_evicts_needs_evict() -> None:
    evicting = _dr(
        guard="ConsumedBy", consumedBy=["a"], evicted=[{"topic": "orders", "partition": 0, "groups": ["a"]}]
    )
    with pytest.raises(Forbidden, match=r"^spec.evicted needs Evict in the grant of namespace team-a"):
        access_for("shared", CLUSTER, "team-a", {}).check_delete_records(evicting)
    access_for("shared", THROTTLING, "team-a", {}).check_delete_records(evicting)
