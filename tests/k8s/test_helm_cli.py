"""helm from the same build: the chart's tests render it with `helm template` and check it against this
API server (server-side dry run), and `helm install` works against it as against a cluster."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.controlplane import ControlPlane
from harness.k8s_binaries import helm_version


def tiny_chart(root: Path) -> Path:
    chart = root / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "configmap.yaml").write_text(
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-greeting\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "data:\n"
        "  greeting: {{ .Values.greeting | quote }}\n"
    )
    return chart


def test_helm_reports_the_pinned_version(control_plane: ControlPlane) -> None:
    assert control_plane.helm("version", "--template", "{{.Version}}").stdout.strip() == helm_version()


def test_helm_template_renders_and_the_api_server_accepts_it(
    control_plane: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    chart = tiny_chart(tmp_path)
    rendered = control_plane.helm(
        "template", "demo", str(chart), "--namespace", k8s_namespace, "--set", "greeting=hi"
    ).stdout
    (manifest,) = [d for d in yaml.safe_load_all(rendered) if d]
    assert manifest["metadata"] == {"name": "demo-greeting", "namespace": k8s_namespace}
    assert manifest["data"] == {"greeting": "hi"}

    dry = control_plane.kubectl("apply", "--dry-run=server", "-f", "-", stdin=rendered)
    assert "configmap/demo-greeting created (server dry run)" in dry.stdout
    assert (
        control_plane.kubectl(
            "get", "configmap", "demo-greeting", "-n", k8s_namespace, check=False
        ).returncode
        != 0
    )


def test_helm_install_creates_the_release_objects(
    control_plane: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    chart = tiny_chart(tmp_path)
    control_plane.helm("install", "demo", str(chart), "--namespace", k8s_namespace)

    cm = control_plane.kubectl_json("get", "configmap", "demo-greeting", "--namespace", k8s_namespace)
    assert cm["data"] == {"greeting": "hello"}
    releases = yaml.safe_load(control_plane.helm("list", "--namespace", k8s_namespace, "-o", "yaml").stdout)
    assert [(r["name"], r["status"]) for r in releases] == [("demo", "deployed")]
