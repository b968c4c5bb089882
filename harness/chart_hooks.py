"""Helm's hook Jobs where no kubelet runs pods (the test control plane, `make demo`).

`helm install` or `upgrade` with `--no-hooks`, and around it each hook of the chart as Helm would run it,
in Helm's order (weight, then name): the hook's ServiceAccount and RBAC applied, its Job's container
command run as a local process under that ServiceAccount's token (the chart's own RBAC, nothing more),
and the hook's objects deleted afterwards (the chart's hooks are `hook-succeeded`). The hooks come from
`helm template` with the same values, so the pre-phase runs before Helm touches anything, as it would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane import ControlPlane

_HOOK = "helm.sh/hook"
_TIMEOUT = 180.0


class HookFailed(RuntimeError):
    """A hook Job's command exited non-zero (the message has its output)."""


def hooks(rendered: str, event: str) -> list[dict[str, Any]]:
    """The hooks of `event` (pre-install, post-upgrade, ...) in a rendered chart, in Helm's order."""
    found = [
        d
        for d in yaml.safe_load_all(rendered)
        if d and event in d["metadata"].get("annotations", {}).get(_HOOK, "").split(",")
    ]
    weight = lambda d: int(d["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))  # noqa: E731
    return sorted(found, key=lambda d: (weight(d), d["metadata"]["name"], d["kind"] == "Job"))


def _local_command(container: dict[str, Any]) -> list[str]:
    argv = [*container.get("command", []), *container.get("args", [])]
    if argv and argv[0] in ("python", "python3", "/opt/ebb/bin/python"):
        argv[0] = sys.executable
    return argv


def run(cp: ControlPlane, found: list[dict[str, Any]], namespace: str, log_dir: Path) -> None:
    """Run the hooks `found`: their other objects (ServiceAccounts, RBAC: weighted before the Jobs) applied
    in one go, each Job's command run in order with its container's plain env, then the objects deleted."""
    objects = [d for d in found if d["kind"] != "Job"]
    if objects:
        cp.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects))
    for doc in (d for d in found if d["kind"] == "Job"):
        pod = doc["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        kubeconfig = cp.service_account_kubeconfig(namespace, pod["serviceAccountName"])
        env = cp.env(kubeconfig)
        env.update({e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e})
        name = doc["metadata"]["name"]
        log = log_dir / f"hook-{name}.log"
        log_dir.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            proc = subprocess.run(
                _local_command(container), env=env, stdout=out, stderr=subprocess.STDOUT, timeout=_TIMEOUT
            )
        if proc.returncode != 0:
            raise HookFailed(f"hook Job {name} exited {proc.returncode}:\n{log.read_text()}")
    if objects:
        cp.kubectl(
            "delete", "-n", namespace, "-f", "-", "--ignore-not-found", "--wait=false",
            stdin=yaml.safe_dump_all(objects),
        )  # fmt: skip


def helm_with_hooks(
    cp: ControlPlane,
    command: str,
    release: str,
    chart: Path,
    namespace: str,
    *,
    values: tuple[str, ...] = (),
    flags: tuple[str, ...] = (),
    log_dir: Path,
) -> subprocess.CompletedProcess[str]:
    """`helm install|upgrade RELEASE CHART -n NAMESPACE VALUES FLAGS` with its hooks run as the kubelet
    would have run their Jobs. `values` (--set, --values) render the hooks too; `flags` are helm's only."""
    phase = "install" if command == "install" else "upgrade"
    if "--create-namespace" in flags and cp.kubectl("get", "namespace", namespace, check=False).returncode:
        cp.kubectl("create", "namespace", namespace)
    template = ["template", release, str(chart), "--namespace", namespace, *values]
    if phase == "upgrade":
        template.append("--is-upgrade")
    rendered = cp.helm(*template).stdout
    run(cp, hooks(rendered, f"pre-{phase}"), namespace, log_dir)
    done = cp.helm(
        command, release, str(chart), "--namespace", namespace, "--no-hooks", *values, *flags, timeout=300
    )
    run(cp, hooks(rendered, f"post-{phase}"), namespace, log_dir)
    return done


def uninstall_with_hooks(
    cp: ControlPlane, release: str, namespace: str, *, log_dir: Path
) -> subprocess.CompletedProcess[str]:
    """`helm uninstall RELEASE` with its pre-delete hooks (from the stored release) run first."""
    stored = cp.helm("get", "hooks", release, "--namespace", namespace).stdout
    run(cp, hooks(stored, "pre-delete"), namespace, log_dir)
    return cp.helm("uninstall", release, "--namespace", namespace, "--no-hooks")
