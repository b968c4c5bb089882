"""The admission webhook's decision: the reconciler's own checks, answered before anything is stored.

Specs naming an inline cluster need no Kubernetes read; what needs a KafkaCluster is tested on a real
API server (tests/k8s/operator/test_operator_admission.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ebb_operator.handlers.admission import Refused, review
from ebb_operator.handlers.runtime import Runtime
from ebb_operator.models.compaction_config import CRD as CC
from ebb_operator.models.crd import CrdInfo
from ebb_operator.models.delete_records import CRD as DR
from ebb_operator.models.kafka_cluster import CRD as KC
from ebb_operator.settings import OperatorSettings

INLINE = {"cluster": {"bootstrapServers": "kafka:9092"}}
PARTITIONS = {"partitions": [{"topic": "orders", "partition": 0, "offset": 5}], "guard": "None"}


def _runtime(**settings: Any) -> Runtime:
    return Runtime.create(OperatorSettings(**settings))


def _review(rt: Runtime, info: CrdInfo, namespace: str, spec: dict[str, Any]) -> list[str]:
    return asyncio.run(review(rt, info, namespace, spec))


def test_an_invalid_pattern_is_refused_with_the_reconcilers_line() -> None:
    with pytest.raises(Refused) as err:
        _review(_runtime(allow_inline_clusters=True), CC, "team", {**INLINE, "topics": {"include": ["a("]}})
    assert err.value.code == 422
    assert str(err.value).startswith("spec.topics.include[0] 'a(': not a valid RE2 regex: missing )")


def test_an_inline_cluster_is_refused_unless_the_operator_allows_it() -> None:
    with pytest.raises(Refused, match=r"spec.cluster \(an inline cluster\) is not allowed") as err:
        _review(_runtime(), DR, "team", {**INLINE, **PARTITIONS})
    assert err.value.code == 403
    assert _review(_runtime(allow_inline_clusters=True), DR, "team", {**INLINE, **PARTITIONS}) == []


def test_without_any_cluster_the_object_is_refused() -> None:
    with pytest.raises(Refused, match=r"name a KafkaCluster in spec\.clusterRef"):
        _review(_runtime(), DR, "team", PARTITIONS)


def test_a_kafka_cluster_is_checked_by_its_model() -> None:
    with pytest.raises(Refused, match=r"spec.access\[0\].topics\[0\] '\(\?<=x\)': not a valid RE2 regex"):
        _review(
            _runtime(),
            KC,
            "",
            {"bootstrapServers": "k:9092", "access": [{"namespaces": ["a"], "topics": ["(?<=x)"]}]},
        )
    assert _review(_runtime(), KC, "", {"bootstrapServers": "k:9092"}) == []
