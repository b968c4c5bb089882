"""Fail when a CRD of this tree refuses or loses what a previous release's CRD accepted.

An upgrade keeps every object already stored: an object the old schema admitted must still be admitted
(or Kubernetes refuses its next update, and the operator's status patches with it), and none of its fields
may be pruned. So, against the CRDs of an earlier commit (read from git, `crds/` of that tree), this
reports for every version the old CRD served:

- a CRD, a served version, a property or the status subresource that is gone (a rename is a drop);
- a changed `type`, scope or kind name;
- a property required now and not before, unless it has a default (the API server fills it in);
- a tighter bound: an enum without some old value (or a new enum), a changed or new `pattern` or `format`
  (no proof that it admits every string the old one did), a larger minimum or a smaller maximum (items,
  length, properties, value), `nullable` or free-form fields (`additionalProperties`,
  `x-kubernetes-preserve-unknown-fields`) taken away, a changed list type;
- a new CEL rule (`x-kubernetes-validations`) on a field that existed: it may refuse stored objects.

New optional fields and looser bounds pass. A narrowing made on purpose is listed in ACCEPTED with the
reason it is safe for stored objects (Kubernetes 1.30+ ratchets validation: an update that leaves an
invalid field as it was is admitted), and is then reported but not counted. `make crd-compat` runs the
check against the previous release (tools/releases.py); tests/unit/delivery/test_crd_compat.py does in
`make test`, and fails on an ACCEPTED entry that matches nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = "crds"

Schema = Mapping[str, Any]

# (CRD, "<version> <path>") -> why the narrowing there is accepted. Reviewed by hand; keep it short.
ACCEPTED: dict[tuple[str, str], str] = {
    ("retentionpolicies.ebb.dev", "v1alpha1 .spec.schedule.interval"): (
        "at least 1m: a shorter interval ran analyses back to back; a stored policy with one keeps being "
        "updatable while its interval is left as it is (ratcheting), and reports InvalidSpec until changed"
    ),
    ("retentionpolicies.ebb.dev", "v1alpha1 .spec"): (
        "budget.maxAge at least consumedRetention: the rule holds only when spec.budget is set, a field no "
        "stored policy has"
    ),
    ("deleterecords.ebb.dev", "v1alpha1 .spec"): (
        "evicted only with guard ConsumedBy: the rule holds only when spec.evicted is set, a field no stored "
        "DeleteRecords has"
    ),
}

# Bounds whose larger value is tighter, and those whose smaller value is.
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")


@dataclass(frozen=True, order=True)
class Incompatibility:
    crd: str
    where: str  # the version and the field's path, e.g. v1alpha1 .spec.partitions[].offset
    problem: str

    def __str__(self) -> str:
        return f"{self.crd} {self.where}: {self.problem}"


def _bound_tightened(key: str, old: Schema, new: Schema) -> str | None:
    """Why the new bound `key` admits less than the old one (None: it admits at least as much)."""
    if key not in new:
        return None
    if key not in old:
        return f"new bound {key}={new[key]}"
    lower = key in _LOWER_BOUNDS
    tighter = new[key] > old[key] if lower else new[key] < old[key]
    if tighter:
        return f"{key} {old[key]} -> {new[key]}"
    exclusive = "exclusiveMinimum" if key == "minimum" else "exclusiveMaximum" if key == "maximum" else None
    if exclusive and new[key] == old[key] and new.get(exclusive) and not old.get(exclusive):
        return f"{key} {new[key]} became exclusive"
    return None


def _open(schema: Schema) -> bool:
    """Whether the schema keeps fields it does not list."""
    return bool(schema.get("x-kubernetes-preserve-unknown-fields")) or schema.get(
        "additionalProperties"
    ) not in (None, False)


def compare_schema(old: Schema, new: Schema, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, problem) for each way `new` admits less than `old` or drops what it kept."""
    here = path or "."
    if "type" in old and new.get("type") != old["type"]:
        yield here, f"type {old['type']} -> {new.get('type')}"
        return  # below a changed type nothing compares
    for key in (*_LOWER_BOUNDS, *_UPPER_BOUNDS):
        if (why := _bound_tightened(key, old, new)) is not None:
            yield here, why
    if "enum" in new:
        missing = [v for v in old.get("enum", ()) if v not in new["enum"]]
        if "enum" not in old:
            yield here, f"new enum {new['enum']}"
        elif missing:
            yield here, f"enum lost {missing}"
    for key in ("pattern", "format"):
        if key in new and new[key] != old.get(key):
            yield here, f"{key} {old.get(key)!r} -> {new[key]!r}"
    if old.get("nullable") and not new.get("nullable"):
        yield here, "no longer nullable"
    if _open(old) and not _open(new):
        yield here, "no longer keeps unknown fields"
    for key in ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type"):
        if key in new and new[key] != old.get(key):
            yield here, f"{key} {old.get(key)!r} -> {new[key]!r}"
    old_rules = {r.get("rule") for r in old.get("x-kubernetes-validations", ())}
    for rule in new.get("x-kubernetes-validations", ()):
        if rule.get("rule") not in old_rules:
            yield here, f"new validation rule {rule.get('rule')!r}"

    old_props, new_props = old.get("properties", {}), new.get("properties", {})
    for name, sub in old_props.items():
        if name not in new_props:
            yield f"{path}.{name}", "field dropped (or renamed)"
        else:
            yield from compare_schema(sub, new_props[name], f"{path}.{name}")
    newly_required = set(new.get("required", ())) - set(old.get("required", ()))
    for name in sorted(newly_required):
        if "default" not in new_props.get(name, {}):
            yield f"{path}.{name}", "required now, without a default"
    if isinstance(old.get("items"), Mapping) and isinstance(new.get("items"), Mapping):
        yield from compare_schema(old["items"], new["items"], f"{path}[]")
    old_extra, new_extra = old.get("additionalProperties"), new.get("additionalProperties")
    if isinstance(old_extra, Mapping) and isinstance(new_extra, Mapping):
        yield from compare_schema(old_extra, new_extra, f"{path}{{}}")


def compare_crd(old: Schema, new: Schema | None) -> Iterator[Incompatibility]:
    name = old["metadata"]["name"]
    if new is None:
        yield Incompatibility(name, "-", "CRD removed")
        return
    old_spec, new_spec = old["spec"], new["spec"]
    if old_spec["scope"] != new_spec["scope"]:
        yield Incompatibility(name, "-", f"scope {old_spec['scope']} -> {new_spec['scope']}")
    for key in ("kind", "plural"):
        if old_spec["names"][key] != new_spec["names"][key]:
            yield Incompatibility(name, "-", f"{key} {old_spec['names'][key]} -> {new_spec['names'][key]}")
    versions = {v["name"]: v for v in new_spec["versions"]}
    for version in old_spec["versions"]:
        if not version.get("served", True):
            continue
        current = versions.get(version["name"])
        if current is None or not current.get("served", True):
            yield Incompatibility(name, version["name"], "version no longer served")
            continue
        if "status" in version.get("subresources", {}) and "status" not in current.get("subresources", {}):
            yield Incompatibility(name, version["name"], "status subresource removed")
        for where, problem in compare_schema(
            version["schema"]["openAPIV3Schema"], current["schema"]["openAPIV3Schema"]
        ):
            yield Incompatibility(name, f"{version['name']} {where}", problem)


def compare(old: list[Schema], new: list[Schema]) -> list[Incompatibility]:
    """Every incompatibility, the ACCEPTED ones included."""
    by_name = {crd["metadata"]["name"]: crd for crd in new}
    return sorted(i for crd in old for i in compare_crd(crd, by_name.get(crd["metadata"]["name"])))


def unaccepted(found: list[Incompatibility]) -> list[Incompatibility]:
    return [i for i in found if (i.crd, i.where) not in ACCEPTED]


def crds_at(commit: str, root: Path = ROOT) -> list[Schema]:
    """The CRDs in `crds/` of a commit (git; a clone without it is told which commit is missing)."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"git {' '.join(args)}: {proc.stderr.strip()} (the CRD check reads commit {commit}: "
                "fetch it, e.g. `git fetch --unshallow`)"
            )
        return proc.stdout

    names = git("ls-tree", "--name-only", f"{commit}:{CRD_DIR}").split()
    return [yaml.safe_load(git("show", f"{commit}:{CRD_DIR}/{n}")) for n in names if n.endswith(".yaml")]


def crds_in(directory: Path) -> list[Schema]:
    return [yaml.safe_load(p.read_text()) for p in sorted(directory.glob("*.yaml"))]


def main(argv: list[str] | None = None) -> int:
    from tools.releases import PREVIOUS

    parser = argparse.ArgumentParser(prog="python -m tools.crd_compat", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--against", default=PREVIOUS.commit, help=f"commit or tag (default: {PREVIOUS.version})"
    )
    parser.add_argument("--crds", type=Path, default=ROOT / CRD_DIR, help="the new CRDs (default: crds/)")
    args = parser.parse_args(argv)
    found = compare(crds_at(args.against), crds_in(args.crds))
    problems = unaccepted(found)
    for accepted in (i for i in found if i not in problems):
        print(f"{accepted} (accepted: {ACCEPTED[(accepted.crd, accepted.where)]})")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} incompatible changes against {args.against}", file=sys.stderr)
        return 1
    print(f"CRDs in {args.crds} accept everything those of {args.against} did")
    return 0


if __name__ == "__main__":
    sys.exit(main())
