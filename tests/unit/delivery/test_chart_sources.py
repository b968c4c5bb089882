"""The chart's generated inputs never drift from their single sources: the CRDs from the operator's
models (crds/, `make crds`) and the operator's RBAC rules (ebb_operator.rbac)."""

from __future__ import annotations

import json

import yaml

from ebb_operator import rbac
from tests.paths import ROOT

CHART = ROOT / "charts" / "ebb"


def test_chart_crds_are_a_byte_for_byte_copy_of_crds() -> None:
    source = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    copy = {p.name: p.read_bytes() for p in (CHART / "files" / "crds").glob("*.yaml")}
    assert source, "crds/ is empty"
    assert sorted(copy) == sorted(source), "run `make chart-crds`: the chart's CRD list differs from crds/"
    stale = [name for name in source if copy[name] != source[name]]
    assert not stale, f"run `make chart-crds`: stale chart CRDs {stale}"


def test_chart_rbac_rules_are_the_operators_rules() -> None:
    for name, rules in rbac.FILES.items():
        rendered = yaml.safe_load((CHART / "files" / name).read_text())
        assert rendered == rules, f"run `make crds`: charts/ebb/files/{name} is stale"


def test_no_cluster_wide_secret_reads_unless_inline_clusters_are_allowed() -> None:
    """The operator reads Secrets only in its own namespace (issue 10, least privilege)."""
    reading = {"get", "list", "watch"}
    reads = [
        r
        for r in rbac.RULES + rbac.JOB_NAMESPACE_RULES
        if "secrets" in r["resources"] and reading & set(r["verbs"])
    ]
    assert reads == []
    # Runs live in the jobs namespace: in tenant namespaces the operator makes no Secret, no SparkApplication.
    touched = {res for r in rbac.NAMESPACED_RULES for res in r["resources"]}
    assert not touched & {"secrets", "sparkapplications"}, touched
    assert all("kafkaclusters" not in r["resources"] for r in rbac.TENANT_EDIT_RULES + rbac.TENANT_VIEW_RULES)


def test_examples_use_only_kinds_the_crds_define() -> None:
    kinds = {yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in (ROOT / "crds").glob("*.yaml")}
    examples = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    assert {e["kind"] for e in examples} == kinds
    assert all(e["apiVersion"] == "ebb.dev/v1alpha1" for e in examples)


def _walk(values: dict[str, object], schema: dict[str, object], path: str) -> list[str]:
    """Paths where values.yaml and values.schema.json disagree on which keys exist."""
    problems: list[str] = []
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return problems  # a free map (labels, annotations, broker.config): any key is allowed
    assert schema.get("additionalProperties") is False, f"{path or '/'}: schema allows unknown keys"
    for key in sorted(set(values) ^ set(properties)):
        where = "values.yaml" if key not in values else "values.schema.json"
        problems.append(f"{path}/{key} missing from {where}")
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(properties.get(key), dict):
            problems += _walk(value, properties[key], f"{path}/{key}")
    return problems


def test_values_schema_covers_exactly_the_documented_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert _walk(values, schema, "") == []
