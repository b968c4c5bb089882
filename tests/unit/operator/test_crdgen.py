"""The committed CRDs are exactly what the models generate, and carry what kubectl users rely on."""

from __future__ import annotations

import re

import yaml

from ebb_operator import crdgen
from tests.paths import ROOT

CRDS = ROOT / "crds"


def _load(plural: str) -> dict:
    return yaml.safe_load((CRDS / f"ebb.dev_{plural}.yaml").read_text())


def test_committed_crds_are_not_stale() -> None:
    expected = crdgen.rendered()
    on_disk = {p.name: p.read_text() for p in CRDS.glob("*.yaml")}
    assert on_disk.keys() == expected.keys(), (
        "crds/ holds other files than the models generate: run `make crds`"
    )
    for name, text in expected.items():
        assert on_disk[name] == text, f"crds/{name} is stale: run `make crds`"


def test_short_names_status_subresource_and_columns() -> None:
    why = ["Reason", "Message"]  # at -o wide (priority 1), on every kind
    expected = {
        "deleterecords": ("dr", ["Phase", "Partitions", "Deleted", "Age", *why]),
        "compactionconfigs": ("cc", ["Topics", "Ready", "Age", *why]),
        "retentionpolicies": ("rp", ["Topics", "Reclaimable", "Held", "Last Run", "Ready", "Age", *why]),
        "kafkaclusters": ("kc", ["Bootstrap", "Cluster ID", "Ready", "Age", *why]),
    }
    for plural, (short, columns) in expected.items():
        crd = _load(plural)
        assert crd["spec"]["group"] == "ebb.dev"
        assert crd["spec"]["names"]["shortNames"] == [short]
        version = crd["spec"]["versions"][0]
        assert version["name"] == "v1alpha1"
        assert version["subresources"] == {"status": {}}
        printed = version["additionalPrinterColumns"]
        assert [c["name"] for c in printed] == columns
        assert [c["name"] for c in printed if c.get("priority") == 1] == why
    reclaimable = next(
        c
        for c in _load("retentionpolicies")["spec"]["versions"][0]["additionalPrinterColumns"]
        if c["name"] == "Reclaimable"
    )
    assert (reclaimable["type"], reclaimable["jsonPath"]) == ("string", ".status.summary.reclaimable")


def test_kubectl_get_ebb_lists_the_tenant_kinds_only() -> None:
    """`kubectl get ebb` must work for a tenant bound to ebb-view, who may not read KafkaClusters."""
    categories = {p: _load(p)["spec"]["names"]["categories"] for p in
                  ("deleterecords", "compactionconfigs", "retentionpolicies", "kafkaclusters")}  # fmt: skip
    assert categories == {
        "deleterecords": ["ebb"],
        "compactionconfigs": ["ebb"],
        "retentionpolicies": ["ebb"],
        "kafkaclusters": ["ebb-admin"],
    }


def _undescribed(node: dict, path: str) -> list[str]:
    """Properties under `node` (objects, and objects in arrays) without a description."""
    missing = []
    for name, prop in (node.get("properties") or {}).items():
        if not str(prop.get("description", "")).strip():
            missing.append(f"{path}.{name}")
        missing += _undescribed(prop, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        missing += _undescribed(node["items"], f"{path}[]")
    return missing


def test_every_spec_and_status_field_of_every_kind_has_a_description() -> None:
    """What `kubectl explain` shows for every field."""
    missing = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        for part in ("spec", "status"):
            missing += _undescribed(schema[part], f"{crd['spec']['names']['kind']}.{part}")
    assert missing == []


def _walk(node: object) -> list[dict]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for v in node.values():
            found.extend(_walk(v))
    elif isinstance(node, list):
        for v in node:
            found.extend(_walk(v))
    return found


def test_schemas_are_structural() -> None:
    """The API server refuses $ref, anyOf-with-null and additionalProperties next to properties."""
    for path in CRDS.glob("*.yaml"):
        for node in _walk(yaml.safe_load(path.read_text())["spec"]["versions"][0]["schema"]):
            assert "$ref" not in node and "anyOf" not in node and "title" not in node, path
            assert not ("properties" in node and "additionalProperties" in node), path
            if "properties" in node or "items" in node:
                assert node.get("type") in ("object", "array"), path


def test_immutability_and_retention_order_rules_are_in_the_crds() -> None:
    dr_spec = _load("deleterecords")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert {"rule": "self == oldSelf", "message": "spec is immutable: create a new DeleteRecords"} in dr_spec[
        "x-kubernetes-validations"
    ]
    rp_spec = _load("retentionpolicies")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]
    rules = [v["rule"] for v in rp_spec["x-kubernetes-validations"]]
    assert any("forcedRetention" in r and ">=" in r for r in rules)


def test_duration_pattern_in_crd_accepts_and_rejects_like_the_model() -> None:
    spec = _load("retentionpolicies")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]
    pattern = re.compile(spec["properties"]["consumedRetention"]["pattern"])
    for good in ("90s", "15m", "1h30m", "7d", "1d12h"):
        assert pattern.match(good)
    for bad in ("1w", "30m1h", "-5m", "5 m", "1.5h"):
        assert not pattern.match(bad)


def test_committed_chart_files_are_not_stale() -> None:
    """The chart's RBAC rules and webhooks, generated from the operator."""
    for name, text in crdgen.chart_files().items():
        path = CRDS.parent / "charts" / "ebb" / "files" / name
        assert path.read_text() == text, f"{path} is stale: run `make crds`"
