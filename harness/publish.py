"""`make publish REGISTRY=host[:port][/path]`: both images and the chart into an OCI registry, the images
recorded by digest, so that `helm install ebb oci://REGISTRY/charts/ebb --version V` runs exactly the
images pushed with it.

1. `docker push` of the two images built by `make images` (or by the cluster tier), as
   REGISTRY/ebb-operator:V and REGISTRY/ebb-broker:V; the digest each push reports is kept.
2. A copy of charts/ebb with version and appVersion V, and, in its values.yaml, `image.registry` REGISTRY
   and each image's tag V and digest: the chart pulls by digest, whatever the tag later points to.
3. `helm package`, then `helm push` to oci://REGISTRY/charts.
4. The record, in the output directory (dist/ by default): publish.json (the references by digest, the
   chart's) and values-images.yaml, a values file that pins the same images for a chart installed from
   elsewhere (`helm install ebb charts/ebb -f dist/values-images.yaml`).

Credentials are Docker's and Helm's own (`docker login`, `helm registry login`). `--plain-http` for a
registry without TLS (Docker accepts one on 127.0.0.1 by itself; any other host needs it listed in the
engine's insecure-registries).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from harness.docker_engine import DockerEngine, DockerUnavailable, docker_engine

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "ebb"
COMPONENTS = ("operator", "broker")
_PUSH_TIMEOUT = 1800.0


class PublishError(RuntimeError):
    """A push or the chart's packaging failed (the message has the tool's output)."""


@dataclass(frozen=True)
class Published:
    registry: str
    version: str
    images: dict[str, str]  # component -> REGISTRY/ebb-<component>:V@sha256:...
    digests: dict[str, str]  # component -> sha256:...
    chart: str  # oci://REGISTRY/charts/ebb
    chart_digest: str

    def values(self) -> dict[str, object]:
        """Chart values pinning these images."""
        out: dict[str, object] = {"image": {"registry": self.registry}}
        for component in COMPONENTS:
            image = {"repository": f"ebb-{component}", "tag": self.version, "digest": self.digests[component]}
            out[component] = {"image": image}
        return out


def _say(message: str) -> None:
    print(f"==> [publish] {message}", flush=True)


def set_values(text: str, changes: Mapping[tuple[str, ...], str]) -> str:
    """values.yaml with the scalars at these key paths replaced, its comments and layout kept."""
    lines = text.splitlines(keepends=True)
    stack: list[tuple[int, str]] = []
    remaining = dict(changes)
    for i, line in enumerate(lines):
        match = re.match(r"^( *)([A-Za-z0-9_.-]+):(.*)$", line.rstrip("\n"))
        if match is None:
            continue
        indent, key = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(k for _, k in stack), key)
        if path in remaining:
            lines[i] = f"{match.group(1)}{key}: {json.dumps(remaining.pop(path))}\n"
        stack.append((indent, key))
    if remaining:
        raise PublishError(f"values.yaml has no key {'.'.join(next(iter(remaining)))}")
    out = "".join(lines)
    parsed = yaml.safe_load(out)
    for path, value in changes.items():
        node = parsed
        for key in path:
            node = node[key]
        if node != value:
            raise PublishError(f"values.yaml: {'.'.join(path)} reads back as {node!r}, not {value!r}")
    return out


def push_image(engine: DockerEngine, source: str, target: str) -> str:
    """`docker push` of `source` as `target`; the digest the registry stored it under."""
    engine.run("tag", source, target, timeout=60)
    began = time.monotonic()
    proc = engine.run("push", target, check=False, timeout=_PUSH_TIMEOUT)
    output = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise PublishError(f"docker push {target} failed:\n{output[-3000:]}")
    match = re.search(r"digest: (sha256:[0-9a-f]{64})", output)
    if match is None:
        raise PublishError(f"docker push {target} reported no digest:\n{output[-2000:]}")
    _say(f"pushed {target}@{match.group(1)} ({time.monotonic() - began:.0f} s)")
    return match.group(1)


def package_chart(chart: Path, registry: str, version: str, digests: Mapping[str, str], work: Path) -> Path:
    """A copy of the chart carrying version V and the pushed images, staged in `work`. A chart without
    `image.registry` (0.1.0) names each image by repository and tag only."""
    staged = work / "chart" / chart.name
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(chart, staged)
    meta = staged / "Chart.yaml"
    meta.write_text(set_values(meta.read_text(), {("version",): version, ("appVersion",): version}))
    values = staged / "values.yaml"
    changes: dict[tuple[str, ...], str] = {}
    by_digest = "image" in (yaml.safe_load(values.read_text()) or {})
    if by_digest:
        changes[("image", "registry")] = registry
    for component in COMPONENTS:
        changes[(component, "image", "tag")] = version
        if by_digest:
            changes[(component, "image", "digest")] = digests[component]
        else:
            changes[(component, "image", "repository")] = f"{registry}/ebb-{component}"
    values.write_text(set_values(values.read_text(), changes))
    return staged


def _helm(helm: str, *args: str) -> str:
    proc = subprocess.run([helm, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise PublishError(f"helm {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def publish(
    engine: DockerEngine,
    registry: str,
    version: str,
    images: Mapping[str, str],
    *,
    out: Path,
    chart: Path = CHART,
    helm: str = "helm",
    plain_http: bool = False,
) -> Published:
    """Push `images` (component -> a reference the engine has) and the chart; write the record to `out`."""
    registry = registry.rstrip("/")
    digests = {c: push_image(engine, images[c], f"{registry}/ebb-{c}:{version}") for c in COMPONENTS}
    return publish_chart(registry, version, digests, out=out, chart=chart, helm=helm, plain_http=plain_http)


def publish_chart(
    registry: str,
    version: str,
    digests: Mapping[str, str],
    *,
    out: Path,
    chart: Path = CHART,
    helm: str = "helm",
    plain_http: bool = False,
) -> Published:
    """The chart pinned to images pushed already (component -> digest), packaged and pushed; the record
    written to `out`. The release workflow pushes its multi-arch images with buildx, then runs this."""
    registry = registry.rstrip("/")
    out.mkdir(parents=True, exist_ok=True)
    staged = package_chart(chart, registry, version, digests, out)
    _helm(helm, "package", str(staged), "--destination", str(out))
    package = out / f"{chart.name}-{version}.tgz"
    pushed = _helm(
        helm, "push", str(package), f"oci://{registry}/charts", *(["--plain-http"] if plain_http else [])
    )
    match = re.search(r"Digest: (sha256:[0-9a-f]{64})", pushed)
    if match is None:
        raise PublishError(f"helm push reported no digest:\n{pushed}")
    published = Published(
        registry=registry,
        version=version,
        images={c: f"{registry}/ebb-{c}:{version}@{d}" for c, d in digests.items()},
        digests=dict(digests),
        chart=f"oci://{registry}/charts/{chart.name}",
        chart_digest=match.group(1),
    )
    (out / "publish.json").write_text(json.dumps(asdict(published), indent=2) + "\n")
    (out / "values-images.yaml").write_text(yaml.safe_dump(published.values(), sort_keys=False))
    _say(f"pushed {published.chart} --version {version} ({published.chart_digest})")
    return published


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.publish", description=__doc__.splitlines()[0])
    parser.add_argument("--registry", required=True, help="host[:port][/path]")
    parser.add_argument("--version", required=True, help="the chart's version and the images' tag")
    parser.add_argument("--operator-image", help="the image to push, as the engine names it")
    parser.add_argument("--broker-image")
    parser.add_argument(
        "--operator-digest", help="with --broker-digest: images pushed already, the chart only"
    )
    parser.add_argument("--broker-digest")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--helm", default="helm")
    parser.add_argument("--plain-http", action="store_true", help="a registry without TLS")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._/-]+)?", args.registry):
        print(f"harness.publish: REGISTRY={args.registry!r}: expected host[:port][/path]", file=sys.stderr)
        return 2
    images = {"operator": args.operator_image, "broker": args.broker_image}
    digests = {"operator": args.operator_digest, "broker": args.broker_digest}
    try:
        if all(digests.values()):
            published = publish_chart(
                args.registry, args.version, {c: str(d) for c, d in digests.items()},
                out=args.out, helm=args.helm, plain_http=args.plain_http,
            )  # fmt: skip
        elif all(images.values()):
            with docker_engine() as engine:
                published = publish(
                    engine, args.registry, args.version, {c: str(i) for c, i in images.items()},
                    out=args.out, helm=args.helm, plain_http=args.plain_http,
                )  # fmt: skip
        else:
            parser.error("give --operator-image and --broker-image, or --operator-digest and --broker-digest")
    except (PublishError, DockerUnavailable) as exc:
        print(f"harness.publish: {exc}", file=sys.stderr)
        return 1
    print(f"helm install ebb {published.chart} --version {published.version} -n ebb --create-namespace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
