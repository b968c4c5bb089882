"""GitOps tools render the chart with `helm template` on every sync (Argo CD) and apply what changed: the
same values must render the same bytes every time, or each sync replaces something (a CA, a password).
helm alone, no API server: quick."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.k8s_binaries import Binaries

CHART = Path(__file__).resolve().parents[2] / "charts" / "ebb"
OPTIONS = {
    "defaults": (),
    "cert-manager": ("--set", "broker.security.certManager.enabled=true"),
    "registry": (
        "--set", "image.registry=registry.example.com:5000/ebb",
        "--set", f"operator.image.digest=sha256:{'1' * 64}",
        "--set", "imagePullSecrets[0].name=pull",
    ),
    "existing-secrets": (
        "--set", "broker.security.tlsSecret=my-tls",
        "--set", "broker.security.adminPasswordSecret=my-admin",
        "--set", "operator.defaultCluster.credentialsSecret=my-client",
    ),
}  # fmt: skip
# Template functions whose result differs from one render to the next, or depends on the cluster.
UNSTABLE = (
    "lookup", "genCA", "genSelfSignedCert", "genSignedCert", "genPrivateKey",
    "randAlpha", "randAlphaNum", "randNumeric", "randAscii", "randBytes", "uuidv4", "now", "date",
)  # fmt: skip


def _template(*options: str) -> bytes:
    helm = Binaries.from_cache().helm
    proc = subprocess.run(
        [str(helm), "template", "ebb", str(CHART), "--namespace", "ebb", *options],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_the_same_values_render_the_same_bytes(options: tuple[str, ...]) -> None:
    first = _template(*options)
    assert first == _template(*options)
    assert b"kind: Secret\n" not in first  # no credentials in what a GitOps repository or tool holds


def test_no_template_calls_a_function_that_differs_between_renders() -> None:
    pattern = re.compile(r"\{\{[^}]*\b(" + "|".join(UNSTABLE) + r")\b")
    found = [
        f"{path.name}: {match.group(0)}"
        for path in sorted((CHART / "templates").glob("*"))
        for match in pattern.finditer(path.read_text())
    ]
    assert found == []
