"""The container images: Ebb's two (operator/Dockerfile, broker-image/Dockerfile), the local Debian bases
they build on where no registry answers, and the node's own (pause, CoreDNS, local-path-provisioner).

Bases. The Dockerfiles' defaults are public images (python:3.11.14-slim-bookworm, eclipse-temurin); they
stay the defaults for users. Where they cannot be pulled, `make base-images` makes local ones from
Debian's packages: `localhost/ebb-debian:bookworm` (debootstrap --variant=minbase, then `docker import`),
`localhost/ebb-python:bookworm` (python3, python3-venv, tini) and `localhost/ebb-jre:bookworm`
(openjdk-17-jre-headless laid out as Temurin's /opt/java/openjdk), from base-images/*.Dockerfile.

Builds use BuildKit (harness.docker_engine) with `--network=host`, and the machine's CA bundle (the file
PIP_CERT / SSL_CERT_FILE / REQUESTS_CA_BUNDLE names, where a TLS-intercepting proxy puts its CA) as the
build secret `ca`: the Dockerfiles mount it in the build stage's pip runs only, so it is in no layer.

Cache (the cluster tier). Each image is tagged with a content hash of everything its build reads: its
Dockerfile, the files it copies, its build arguments and the IDs of its bases; a change of any input makes
a new tag. The node's own images (pause, CoreDNS, local-path-provisioner) are saved (`docker save`) to
`$EBB_CACHE/images/<name>-<hash>.tar`, from which the node imports them (`ctr images import`); with every
tarball present nothing is built and no Docker engine is started. Ebb's two images stay in the engine
(its data root is cached too): the cluster tier pushes them to its registry (harness/publish.py) and the
node pulls them from there. The previous release's are built the same way from a git worktree of its
commit (`release_worktree`), under names of their own (`localhost/ebb-<version>/...`).
Command line: `python -m harness.images {bases,images,cluster}` (mk/delivery.mk, mk/cluster.mk).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.docker_engine import DockerEngine, DockerUnavailable, docker_engine
from harness.k8s_binaries import cache_dir
from harness.node_binaries import NodeBinaries, NodeBinariesMissing

ROOT = Path(__file__).resolve().parents[1]
BASE_DIR = ROOT / "base-images"
NODE_IMAGE_DIR = Path(__file__).parent / "node" / "images"

DEBIAN_BASE = "localhost/ebb-debian:bookworm"
PYTHON_BASE = "localhost/ebb-python:bookworm"
JRE_BASE = "localhost/ebb-jre:bookworm"
PUBLIC_BASES = ("python:3.11.14-slim-bookworm", "eclipse-temurin:17.0.16_8-jre")  # the Dockerfiles' defaults
_INPUTS_LABEL = "dev.ebb.inputs"
BUILD_CACHE_KEEP = "4GB"  # of BuildKit's cache kept after the cluster tier's builds
_DEBOOTSTRAP_TIMEOUT = 1200.0
_BUILD_TIMEOUT = 3600.0


class ImageBuildError(RuntimeError):
    """A build step failed; the message carries the end of its output."""


def _say(message: str) -> None:
    print(f"==> [images] {message}", flush=True)


def images_dir() -> Path:
    return cache_dir() / "images"


def ca_bundle() -> Path | None:
    """The machine's CA bundle for pip inside builds (None: the build trusts its own certifi)."""
    for var in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every file under `paths`, sorted, without bytecode (.dockerignore excludes it from the context)."""
    for path in sorted(paths):
        if path.is_file():
            yield path
        elif path.is_dir():
            for sub in sorted(path.rglob("*")):
                if sub.is_file() and "__pycache__" not in sub.parts and sub.suffix != ".pyc":
                    yield sub
        else:
            raise ImageBuildError(f"image input {path} does not exist")


@dataclass(frozen=True)
class Image:
    """One image: how to build it, and what its content hash covers."""

    name: str  # repository, e.g. localhost/ebb-operator
    dockerfile: Path
    context: Path
    inputs: tuple[Path, ...]  # files and directories the build reads (besides the Dockerfile)
    build_args: dict[str, str] = field(default_factory=dict)
    bases: tuple[str, ...] = ()  # images FROM which it builds: their IDs are part of the hash

    def content_hash(self, base_ids: dict[str, str]) -> str:
        digest = hashlib.sha256()
        digest.update(self.dockerfile.read_bytes())
        for path in _files(self.inputs):
            digest.update(str(path.relative_to(self.context)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        digest.update(json.dumps(self.build_args, sort_keys=True).encode())
        for base in self.bases:
            digest.update(base_ids[base].encode())
        return digest.hexdigest()[:16]

    @property
    def short(self) -> str:
        return self.name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class BuiltImage:
    ref: str  # repository:tag, the tag being the content hash
    tarball: Path


def ebb_images(
    python_image: str = PYTHON_BASE,
    java_image: str = JRE_BASE,
    *,
    root: Path = ROOT,
    prefix: str = "localhost",
) -> dict[str, Image]:
    """operator/Dockerfile and broker-image/Dockerfile of the tree `root`, on the given bases, named
    `prefix`/ebb-operator and `prefix`/ebb-broker."""
    sources: tuple[Path, ...] = (
        root / ".dockerignore",
        root / "pyproject.toml",
        root / "README.md",
        root / "broker-image" / "ebb_broker",
        root / "operator" / "ebb_operator",
    )
    formats = root / "formats" / "ebb_formats"
    if formats.is_dir():  # a tree older than the shared formats package (0.1.0) has none
        sources = (*sources, formats)
    return {
        "operator": Image(
            f"{prefix}/ebb-operator",
            root / "operator" / "Dockerfile",
            root,
            (*sources, root / "operator" / "docker-entrypoint.sh"),
            {"PYTHON_IMAGE": python_image, "JAVA_IMAGE": java_image},
            (python_image, java_image),
        ),
        "broker": Image(
            f"{prefix}/ebb-broker",
            root / "broker-image" / "Dockerfile",
            root,
            sources,
            {"PYTHON_IMAGE": python_image},
            (python_image,),
        ),
    }


def node_images(node_bin: Path) -> dict[str, Image]:
    """The node's images, each one binary from harness/node/build.sh on a scratch or Debian base."""

    def single(name: str, binary: str, bases: tuple[str, ...] = ()) -> Image:
        args = {"DEBIAN_IMAGE": DEBIAN_BASE} if bases else {}
        return Image(
            f"localhost/{name}",
            NODE_IMAGE_DIR / f"{name}.Dockerfile",
            node_bin,
            (node_bin / binary,),
            args,
            bases,
        )

    return {
        "pause": single("pause", "pause"),
        "coredns": single("coredns", "coredns"),
        "local-path-provisioner": single("local-path-provisioner", "local-path-provisioner", (DEBIAN_BASE,)),
    }


# --- bases ---------------------------------------------------------------------------------------------


def _debian_mirror() -> str:
    """The Debian mirror of this machine's apt sources (debootstrap fetches from it)."""
    for source in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        with contextlib.suppress(OSError):
            for line in source.read_text().splitlines():
                match = re.match(r"^\s*(?:URIs:|deb)\s+(\S*/debian)/?\s*", line)
                if match and "security" not in match.group(1):
                    return match.group(1)
    return "http://deb.debian.org/debian"


def _debian_base(engine: DockerEngine) -> None:
    """debootstrap --variant=minbase bookworm, imported as DEBIAN_BASE (about 2 minutes)."""
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise ImageBuildError(
            "debootstrap is not installed: `apt-get install debootstrap` (make cluster-packages)"
        )
    mirror = _debian_mirror()
    _say(f"debootstrap --variant=minbase bookworm from {mirror} (about 2 minutes)")
    began = time.monotonic()
    images_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".debootstrap-", dir=images_dir()) as tmp:
        rootfs = Path(tmp) / "rootfs"
        proc = subprocess.run(
            [debootstrap, "--variant=minbase", "bookworm", str(rootfs), mirror],
            capture_output=True,
            text=True,
            timeout=_DEBOOTSTRAP_TIMEOUT,
        )
        if proc.returncode != 0:
            raise ImageBuildError(
                f"debootstrap exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}"
            )
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / leftover).glob("*"):
                if path.is_file():
                    path.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        try:
            with tar.stdout:  # docker reads tar's pipe; our end of it is closed once docker is done
                engine.run("import", "-", DEBIAN_BASE, stdin=tar.stdout, timeout=600)
            if tar.wait(60) != 0:
                raise ImageBuildError("tar of the debootstrap root failed")
        finally:
            if tar.poll() is None:  # the import failed or tar hangs: never leave it running
                tar.kill()
                tar.wait()
    _say(f"{DEBIAN_BASE} imported ({time.monotonic() - began:.0f} s)")


def _base_inputs(dockerfile: Path, debian_id: str) -> str:
    return hashlib.sha256(dockerfile.read_bytes() + debian_id.encode()).hexdigest()[:16]


def _label(engine: DockerEngine, ref: str) -> str | None:
    proc = engine.run(
        "image", "inspect", "--format", f'{{{{ index .Config.Labels "{_INPUTS_LABEL}" }}}}', ref,
        check=False, timeout=60,
    )  # fmt: skip
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def ensure_bases(engine: DockerEngine) -> dict[str, str]:
    """The local bases, built where missing or out of date; their image IDs by name."""
    if engine.image_id(DEBIAN_BASE) is None:
        _debian_base(engine)
    debian_id = engine.image_id(DEBIAN_BASE)
    assert debian_id is not None
    for ref, dockerfile in (
        (PYTHON_BASE, BASE_DIR / "python.Dockerfile"),
        (JRE_BASE, BASE_DIR / "jre.Dockerfile"),
    ):
        inputs = _base_inputs(dockerfile, debian_id)
        if _label(engine, ref) == inputs:
            continue
        _say(f"building {ref} from {dockerfile.relative_to(ROOT)} (Debian packages)")
        began = time.monotonic()
        with tempfile.TemporaryDirectory() as empty:
            _build(engine, dockerfile, Path(empty), ref, {"DEBIAN_IMAGE": DEBIAN_BASE}, label=inputs)
        _say(f"{ref} built ({time.monotonic() - began:.0f} s)")
    ids = {ref: engine.image_id(ref) for ref in (DEBIAN_BASE, PYTHON_BASE, JRE_BASE)}
    missing = [ref for ref, image_id in ids.items() if image_id is None]
    if missing:
        raise ImageBuildError(f"bases missing after their build: {missing}")
    known = {ref: image_id for ref, image_id in ids.items() if image_id is not None}
    _write_base_ids(known)
    return known


def _base_ids_file() -> Path:
    return images_dir() / "bases.json"


def _write_base_ids(ids: dict[str, str]) -> None:
    images_dir().mkdir(parents=True, exist_ok=True)
    _base_ids_file().write_text(json.dumps(ids, indent=2) + "\n")


def recorded_base_ids() -> dict[str, str]:
    """The base IDs of the last build (empty before the first): tags are computable without Docker."""
    try:
        data = json.loads(_base_ids_file().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()}


# --- builds ---------------------------------------------------------------------------------------------


def _build(
    engine: DockerEngine,
    dockerfile: Path,
    context: Path,
    ref: str,
    build_args: dict[str, str],
    *,
    label: str | None = None,
) -> None:
    argv = ["build", "--network=host", "--progress=plain", "-f", str(dockerfile), "-t", ref]
    for key, value in build_args.items():
        argv += ["--build-arg", f"{key}={value}"]
    ca = ca_bundle()
    if ca is not None:
        argv += ["--secret", f"id=ca,src={ca}"]
    if label is not None:
        argv += ["--label", f"{_INPUTS_LABEL}={label}"]
    argv.append(str(context))
    log = images_dir() / f"build-{ref.rsplit('/', 1)[-1].replace(':', '-')}.log"
    images_dir().mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = engine.run(*argv, check=False, timeout=_BUILD_TIMEOUT, stdout=out)
        out.write(proc.stderr)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise ImageBuildError(f"docker build of {ref} failed (log {log}):\n{tail}")


def _build_image(engine: DockerEngine, image: Image, ref: str) -> None:
    """Ebb's images build in the repository (.dockerignore keeps the context small); the node's from a
    context holding just their inputs (hard links), not the whole directory of node binaries."""
    if (image.context / ".dockerignore").exists():
        _build(engine, image.dockerfile, image.context, ref, image.build_args)
        return
    with tempfile.TemporaryDirectory(dir=images_dir()) as tmp:
        for path in _files(image.inputs):
            target = Path(tmp) / path.relative_to(image.context)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)
        _build(engine, image.dockerfile, Path(tmp), ref, image.build_args)


def _tarball(image: Image, tag: str) -> Path:
    return images_dir() / f"{image.short}-{tag}.tar"


def _save(engine: DockerEngine, ref: str, target: Path, *, prune_tags: bool = True) -> None:
    partial = target.with_suffix(".tar.partial")
    engine.run("save", "-o", str(partial), ref, timeout=900)
    partial.rename(target)
    # Older builds of the same image are superseded: their tarballs, logs and tags in the engine.
    stem = target.name.rsplit("-", 1)[0]
    for old in [*target.parent.glob(f"{stem}-*.tar"), *target.parent.glob(f"build-{stem}-*.log")]:
        if old.stem.rsplit("-", 1)[-1] != target.stem.rsplit("-", 1)[-1]:
            old.unlink()
    if prune_tags:
        _prune_tags(engine, ref)


def _prune_tags(engine: DockerEngine, ref: str) -> None:
    """The other tags of `ref`'s repository (superseded builds) go from the engine."""
    repository = ref.rsplit(":", 1)[0]
    tags = engine.run("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repository, timeout=60)
    old_tags = [t for t in tags.stdout.decode().split() if t != ref]
    if old_tags:
        engine.run("image", "rm", *old_tags, check=False, timeout=300)


def planned(images: dict[str, Image], base_ids: dict[str, str]) -> dict[str, BuiltImage] | None:
    """Refs and tarballs of `images` from the recorded base IDs; None if some base was never built."""
    out = {}
    for key, image in images.items():
        if any(base not in base_ids for base in image.bases):
            return None
        tag = image.content_hash(base_ids)
        out[key] = BuiltImage(f"{image.name}:{tag}", _tarball(image, tag))
    return out


def ensure_node_images(node_bin: Path) -> dict[str, BuiltImage]:
    """The images the cluster tier imports into its node, as tarballs in the cache; builds (starting a
    Docker engine only then) what is missing. Keys: pause, coredns, local-path-provisioner, debian."""
    images = node_images(node_bin)
    plan = planned(images, recorded_base_ids())
    debian_tar = images_dir() / "ebb-debian-bookworm.tar"
    if plan is not None and debian_tar.exists() and all(b.tarball.exists() for b in plan.values()):
        return {**plan, "debian": BuiltImage(_debian_ref(), debian_tar)}
    _say("building the node's images (Docker engine started for the builds)")
    with docker_engine() as engine:
        base_ids = ensure_bases(engine)
        plan = planned(images, base_ids)
        assert plan is not None
        for key, image in images.items():
            built = plan[key]
            if built.tarball.exists():
                continue
            began = time.monotonic()
            _say(f"building {built.ref} from {image.dockerfile.name}")
            _build_image(engine, image, built.ref)
            _save(engine, built.ref, built.tarball)
            _say(f"{built.ref} built and saved ({time.monotonic() - began:.0f} s)")
        if not debian_tar.exists():
            engine.run("tag", DEBIAN_BASE, _debian_ref(base_ids))
            _save(engine, _debian_ref(base_ids), debian_tar, prune_tags=False)  # :bookworm is the base
    return {**plan, "debian": BuiltImage(_debian_ref(), debian_tar)}


def ensure_ebb_images(engine: DockerEngine, images: dict[str, Image] | None = None) -> dict[str, str]:
    """Ebb's images (ebb_images(): this tree's by default) in `engine`, built where missing; their refs
    (repository:content-hash) by key (operator, broker)."""
    base_ids = ensure_bases(engine)
    images = images or ebb_images()
    plan = planned(images, base_ids)
    assert plan is not None
    for key, image in images.items():
        ref = plan[key].ref
        if engine.image_id(ref) is not None:
            continue
        began = time.monotonic()
        _say(f"building {ref} from {image.dockerfile.relative_to(image.context)} in {image.context}")
        _build_image(engine, image, ref)
        _prune_tags(engine, ref)
        _say(f"{ref} built ({time.monotonic() - began:.0f} s)")
    # BuildKit's cache (the dependency layers above all) stays, within a bound.
    engine.run("builder", "prune", "--force", "--keep-storage", BUILD_CACHE_KEEP, check=False, timeout=300)
    return {key: built.ref for key, built in plan.items()}


def release_worktree(commit: str, root: Path = ROOT) -> Path:
    """A git worktree of `commit` in the cache (made once; any checkout of the commit found there is used,
    also one another clone made)."""
    path = cache_dir() / "releases" / commit
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0 and head.stdout.strip() == commit:
        return path
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "-C", str(root), "worktree", "prune"], capture_output=True, check=False)
    proc = subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", str(path), commit],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ImageBuildError(
            f"git worktree add of {commit} failed ({proc.stderr.strip()}): a clone without that commit? "
            "`git fetch --unshallow`"
        )
    return path


def release_images(version: str, commit: str) -> dict[str, Image]:
    """A release's images, built from a worktree of its commit under names of their own."""
    return ebb_images(root=release_worktree(commit), prefix=f"localhost/ebb-{version}")


def _debian_ref(base_ids: dict[str, str] | None = None) -> str:
    image_id = (base_ids or recorded_base_ids())[DEBIAN_BASE]
    return f"localhost/ebb-debian:{image_id.removeprefix('sha256:')[:16]}"


def _pullable(engine: DockerEngine, ref: str) -> bool:
    if engine.image_id(ref) is not None:
        return True
    return engine.run("pull", "--quiet", ref, check=False, timeout=600).returncode == 0


def build_user_images(tag: str, bases: str) -> None:
    """`make images`: ebb-operator:TAG and ebb-broker:TAG on the public bases, or the local ones where
    those cannot be pulled (bases=auto), or as told (public, local)."""
    with docker_engine() as engine:
        if bases == "auto":
            bases = "public" if all(_pullable(engine, ref) for ref in PUBLIC_BASES) else "local"
            if bases == "local":
                _say("the public bases cannot be pulled here: building on the local Debian bases")
        if bases == "local":
            ensure_bases(engine)
            images = ebb_images()
        else:
            images = ebb_images(*PUBLIC_BASES)
        for image in images.values():
            ref = f"{image.short}:{tag}"
            began = time.monotonic()
            _say(f"building {ref} from {image.dockerfile.relative_to(ROOT)} (bases: {bases})")
            _build(engine, image.dockerfile, image.context, ref, image.build_args)
            _say(f"{ref} built ({time.monotonic() - began:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.images", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("bases", help="build the local Debian bases (make base-images)")
    user = sub.add_parser("images", help="build ebb-operator:TAG and ebb-broker:TAG (make images)")
    user.add_argument("--tag", required=True)
    user.add_argument("--bases", choices=("auto", "public", "local"), default="auto")
    sub.add_parser(
        "cluster",
        help="the cluster tier's images, cached by content hash (make cluster-images): the node's, Ebb's, "
        "and the previous release's (tools/releases.py)",
    )
    args = parser.parse_args(argv)
    began = time.monotonic()
    try:
        if args.command == "bases":
            with docker_engine() as engine:
                for ref, image_id in ensure_bases(engine).items():
                    _say(f"{ref}: {image_id}")
        elif args.command == "images":
            build_user_images(args.tag, args.bases)
        else:
            for key, built in ensure_node_images(NodeBinaries.from_cache().bin).items():
                _say(f"{key}: {built.ref} ({built.tarball})")
            from tools.releases import PREVIOUS

            with docker_engine() as engine:
                for key, ref in ensure_ebb_images(engine).items():
                    _say(f"{key}: {ref}")
                previous = release_images(PREVIOUS.version, PREVIOUS.commit)
                for key, ref in ensure_ebb_images(engine, previous).items():
                    _say(f"{key} {PREVIOUS.version}: {ref}")
    except (ImageBuildError, DockerUnavailable, NodeBinariesMissing) as exc:
        print(f"harness.images: {exc}", file=sys.stderr)
        return 1
    _say(f"done in {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
