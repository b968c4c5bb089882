"""The SparkApplication a run creates: the analysis job's main file, the request mounted from a Secret,
image and service account from the operator's settings unless the policy overrides them."""

from __future__ import annotations

from typing import Any

import pytest

from ebb_operator.handlers.errors import InvalidSpec
from ebb_operator.handlers.retention.engines import REQUEST_DIR, spark_application
from ebb_operator.models.retention_policy import RetentionPolicySpec
from ebb_operator.settings import OperatorSettings

OWNER = {"apiVersion": "ebb.dev/v1alpha1", "kind": "RetentionPolicy", "name": "p", "uid": "u"}
SETTINGS = OperatorSettings(image="ebb-operator:2", spark_service_account="ebb-spark-driver")


def _spec(**extra: Any) -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {"topics": {"include": ["t"]}, "consumedRetention": "1h", **extra}
    )


def test_spark_application_runs_the_job_on_the_mounted_request() -> None:
    spec = _spec(
        analysis={
            "engine": "SparkApplication",
            "sparkApplication": {"executor": {"cores": 2, "instances": 3}},
        }
    )
    app = spark_application("p-r1", "ns", OWNER, {"ebb.dev/retention-policy": "p"}, spec, SETTINGS)
    assert (app["apiVersion"], app["metadata"]["name"], app["metadata"]["ownerReferences"]) == (
        "sparkoperator.k8s.io/v1beta2",
        "p-r1",
        [OWNER],
    )
    s = app["spec"]
    assert (s["type"], s["image"], s["restartPolicy"]) == ("Python", "ebb-operator:2", {"type": "Never"})
    assert s["mainApplicationFile"].startswith("local:///")
    assert s["mainApplicationFile"].endswith("ebb_operator/analysis/__main__.py")
    assert s["arguments"] == ["--request", f"{REQUEST_DIR}/request.json", "--report-configmap", "p-r1"]
    mount = [{"name": "p-r1", "path": REQUEST_DIR, "secretType": "Generic"}]
    assert s["driver"] == {"cores": 1, "memory": "1g", "secrets": mount, "serviceAccount": "ebb-spark-driver"}
    assert s["executor"] == {
        "cores": 2, "memory": "1g", "secrets": mount, "instances": 3, "serviceAccount": "ebb-spark-driver"
    }  # fmt: skip


def test_the_policy_overrides_image_and_account_only_where_set() -> None:
    spec = _spec(
        analysis={
            "engine": "SparkApplication",
            "sparkApplication": {"image": "registry/own:1", "serviceAccount": "mine"},
        }
    )
    s = spark_application("p-r", "ns", OWNER, {}, spec, SETTINGS)["spec"]
    assert (s["image"], s["driver"]["serviceAccount"]) == ("registry/own:1", "mine")


def test_without_an_image_the_run_is_an_invalid_spec() -> None:
    with pytest.raises(InvalidSpec, match="EBB_OPERATOR_IMAGE"):
        spark_application(
            "p-r", "ns", OWNER, {}, _spec(analysis={"engine": "SparkApplication"}), OperatorSettings()
        )
