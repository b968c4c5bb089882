"""The CRDs of this tree accept every object the previous release's accepted (tools/crd_compat.py), and the
check itself catches each kind of narrowing on a copy of a real CRD."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tests.paths import ROOT
from tools.crd_compat import ACCEPTED, compare, crds_at, crds_in, unaccepted
from tools.releases import PREVIOUS


def test_the_crds_accept_everything_the_previous_release_accepted() -> None:
    old = crds_at(PREVIOUS.commit)
    assert {c["metadata"]["name"] for c in old} == {
        "compactionconfigs.ebb.dev",
        "deleterecords.ebb.dev",
        "kafkaclusters.ebb.dev",
        "retentionpolicies.ebb.dev",
    }
    found = compare(old, crds_in(ROOT / "crds"))
    assert unaccepted(found) == []
    # Every accepted narrowing is one that exists (none left over from a change undone).
    assert set(ACCEPTED) <= {(i.crd, i.where) for i in found}


def test_the_changelog_names_the_previous_release_by_its_commit() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    section = re.search(rf"^## \[?{re.escape(PREVIOUS.version)}\b.*?(?=^## |\Z)", changelog, re.M | re.S)
    assert section is not None, f"CHANGELOG.md has no section for {PREVIOUS.version}"
    assert PREVIOUS.commit in section.group(0)


def _spec(crd: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def _delete_records() -> dict[str, Any]:
    (crd,) = [c for c in crds_in(ROOT / "crds") if c["metadata"]["name"] == "deleterecords.ebb.dev"]
    return dict(crd)


def _partition(spec: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = spec["properties"]["partitions"]["items"]["properties"]
    return properties


def _drop_timeout(s: dict[str, Any]) -> None:
    del s["properties"]["timeout"]


def _rename_guard(s: dict[str, Any]) -> None:
    s["properties"]["protection"] = s["properties"].pop("guard")


def _retype_offset(s: dict[str, Any]) -> None:
    _partition(s)["offset"]["type"] = "string"


def _require_dry_run(s: dict[str, Any]) -> None:
    s["properties"]["dryRun"].pop("default", None)
    s["required"] = [*s.get("required", []), "dryRun"]


def _narrow_guard(s: dict[str, Any]) -> None:
    s["properties"]["guard"]["enum"] = s["properties"]["guard"]["enum"][:1]


def _pattern_topic(s: dict[str, Any]) -> None:
    _partition(s)["topic"]["pattern"] = "^[a-z]+$"


def _raise_minimum(s: dict[str, Any]) -> None:
    _partition(s)["partition"]["minimum"] = 1


def _fewer_items(s: dict[str, Any]) -> None:
    s["properties"]["partitions"]["maxItems"] = 10


def _shorter_name(s: dict[str, Any]) -> None:
    s["properties"]["clusterRef"]["properties"]["name"]["maxLength"] = 8


def _new_rule(s: dict[str, Any]) -> None:
    s.setdefault("x-kubernetes-validations", []).append({"rule": "size(self.partitions) < 3"})


@pytest.mark.parametrize(
    ("change", "path", "problem"),
    [
        (_drop_timeout, ".spec.timeout", "field dropped"),
        (_rename_guard, ".spec.guard", "field dropped (or renamed)"),
        (_retype_offset, ".spec.partitions[].offset", "type integer -> string"),
        (_require_dry_run, ".spec.dryRun", "required now, without a default"),
        (_narrow_guard, ".spec.guard", "enum lost"),
        (_pattern_topic, ".spec.partitions[].topic", "pattern"),
        (_raise_minimum, ".spec.partitions[].partition", "minimum 0 -> 1"),
        (_fewer_items, ".spec.partitions", "maxItems"),
        (_shorter_name, ".spec.clusterRef.name", "maxLength 253 -> 8"),
        (_new_rule, ".spec", "new validation rule"),
    ],
)
def test_each_narrowing_is_reported_with_its_path(change: Any, path: str, problem: str) -> None:
    old = _delete_records()
    new = copy.deepcopy(old)
    change(_spec(new))
    found = compare([old], [new])
    assert any(i.where == f"v1alpha1 {path}" and problem in i.problem for i in found), found


def test_additions_and_looser_bounds_pass() -> None:
    old = _delete_records()
    new = copy.deepcopy(old)
    spec = _spec(new)
    spec["properties"]["note"] = {"type": "string", "maxLength": 64}
    spec["properties"]["partitions"].pop("maxItems", None)
    spec["properties"]["guard"]["enum"] = [*spec["properties"]["guard"]["enum"], "Everything"]
    assert compare([old], [new]) == []


def test_a_removed_crd_or_version_is_reported() -> None:
    old = _delete_records()
    gone = copy.deepcopy(old)
    gone["spec"]["versions"][0]["served"] = False
    assert [i.problem for i in compare([old], [])] == ["CRD removed"]
    assert [i.problem for i in compare([old], [gone])] == ["version no longer served"]
