"""`make publish` pins the chart it pushes to the images it pushed (harness/publish.py): registry, tags and
digests written into a copy of the chart's values with its comments kept, Chart.yaml carrying the
version; a chart older than image.registry (0.1.0) gets full repository names instead."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from harness.publish import CHART, PublishError, package_chart, set_values
from tests.paths import ROOT
from tools.releases import PREVIOUS

DIGESTS = {"operator": "sha256:" + "1" * 64, "broker": "sha256:" + "2" * 64}


def test_this_charts_copy_pins_both_images_by_digest(tmp_path: Path) -> None:
    staged = package_chart(CHART, "registry.example.com/ebb", "1.2.3", DIGESTS, tmp_path)
    values = yaml.safe_load((staged / "values.yaml").read_text())
    assert values["image"]["registry"] == "registry.example.com/ebb"
    for component, digest in DIGESTS.items():
        assert values[component]["image"] == {
            **yaml.safe_load((CHART / "values.yaml").read_text())[component]["image"],
            "tag": "1.2.3",
            "digest": digest,
        }
    chart = yaml.safe_load((staged / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == ("1.2.3", "1.2.3")
    # Only those lines changed: the values' documentation is what users read in the pushed chart.
    before, after = (
        (CHART / "values.yaml").read_text().splitlines(),
        (staged / "values.yaml").read_text().splitlines(),
    )
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after, strict=True)) == 5


def test_the_previous_releases_chart_names_each_image_in_full(tmp_path: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PREVIOUS.commit, "charts/ebb"], capture_output=True, check=True
    ).stdout
    (tmp_path / "chart.tar").write_bytes(archive)
    with tarfile.open(tmp_path / "chart.tar") as tar:
        tar.extractall(tmp_path / "old", filter="data")
    staged = package_chart(
        tmp_path / "old" / "charts" / "ebb", "127.0.0.1:5000", PREVIOUS.version, DIGESTS, tmp_path
    )
    values = yaml.safe_load((staged / "values.yaml").read_text())
    assert "registry" not in values.get("image", {})
    assert values["operator"]["image"]["repository"] == "127.0.0.1:5000/ebb-operator"
    assert values["broker"]["image"]["tag"] == PREVIOUS.version


def test_a_key_that_is_not_there_is_an_error() -> None:
    with pytest.raises(PublishError, match=r"no key image\.mirror"):
        set_values('image:\n  registry: ""\n', {("image", "mirror"): "x"})
