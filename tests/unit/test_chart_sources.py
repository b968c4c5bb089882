"""The chart's generated inputs never drift from their single sources: the CRDs from the operator's
models (crds/, `make crds`) and the operator's RBAC rules (ebb_operator.rbac)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ebb_operator import rbac

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ebb"


def test_chart_crds_are_a_byte_for_byte_copy_of_crds() -> None:
    source = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    copy = {p.name: p.read_bytes() for p in (CHART / "files" / "crds").glob("*.yaml")}
    assert source, "crds/ is empty"
    assert sorted(copy) == sorted(source), "run `make chart-crds`: the chart's CRD list differs from crds/"
    stale = [name for name in source if copy[name] != source[name]]
    assert not stale, f"run `make chart-crds`: stale chart CRDs {stale}"


def test_chart_rbac_rules_are_the_operators_rules() -> None:
    rendered = yaml.safe_load((CHART / "files" / "operator-rules.yaml").read_text())
    assert rendered == rbac.RULES, "run `make crds`: charts/ebb/files/operator-rules.yaml is stale"


def test_examples_use_only_kinds_the_crds_define() -> None:
    kinds = {yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in (ROOT / "crds").glob("*.yaml")}
    examples = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    assert {e["kind"] for e in examples} == kinds
    assert all(e["apiVersion"] == "ebb.dev/v1alpha1" for e in examples)
