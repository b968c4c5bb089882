"""The release workflow (.github/workflows/release.yml) passes actionlint, and publishes what a release
promises: both images for two architectures with provenance, the chart pinned to their digests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from harness.k8s_binaries import cache_dir
from tests.paths import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _actionlint() -> Path:
    version = re.search(r"^ACTIONLINT_VERSION := (\S+)$", (ROOT / "mk" / "delivery.mk").read_text(), re.M)
    assert version is not None
    binary = cache_dir() / "tools" / f"actionlint-{version.group(1)}" / "actionlint"
    assert binary.exists(), f"{binary} is not built: run `make actionlint`"
    return binary


def _lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(_actionlint()), "-no-color", *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_actionlint_finds_nothing() -> None:
    proc = _lint(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = WORKFLOW.read_text().replace(
        "needs.images.outputs.operator-digest", "needs.images.outputs.operatr"
    )
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    path = tmp_path / ".github" / "workflows" / "release.yml"
    path.write_text(broken)
    proc = _lint(path)
    assert proc.returncode != 0 and "operatr" in proc.stdout


def test_both_images_are_multi_arch_with_provenance_and_the_chart_is_pinned_to_them() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    builds = {s["id"]: s["with"] for s in jobs["images"]["steps"] if "build-push-action" in s.get("uses", "")}
    assert set(builds) == {"operator", "broker"}
    for build in builds.values():
        assert build["platforms"] == "linux/amd64,linux/arm64"
        assert build["push"] is True and build["provenance"] == "mode=max" and build["sbom"] is True
    attested = [s for s in jobs["images"]["steps"] if "attest-build-provenance" in s.get("uses", "")]
    assert len(attested) == 2
    push = next(s for s in jobs["chart"]["steps"] if s.get("id") == "push")
    assert "harness.publish" in push["run"] and "--operator-digest" in push["run"]
    assert jobs["chart"]["needs"] == "images" and jobs["images"]["needs"] == "check"
