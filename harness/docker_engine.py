"""A Docker engine for image builds: the one the user runs, or a dockerd started here for the builds.

`make images` and the cluster tier build with BuildKit (the Dockerfiles mount the CA bundle as a build
secret, and `RUN --mount` needs BuildKit). Which client: `docker` when it has buildx (Docker 23+ builds
with BuildKit by default); else Debian's `/usr/bin/docker` 20.10, whose BuildKit is built in
(`DOCKER_BUILDKIT=1`). The static 28.x CLI some machines put first on PATH has neither and would fall
back to the legacy builder, which cannot parse `RUN --mount`.

Which engine: the one `docker info` reaches (DOCKER_HOST or the default socket). When none answers and
this process is root with `dockerd` installed (Debian's docker.io), a private dockerd is started for
the duration of the block: its own socket and exec root under /run, its data root in
`$EBB_CACHE/docker` (so the build cache and the base images survive between runs), and no host network
changes at all: no bridge, no iptables rules, no ip_forward (`--bridge=none --iptables=false
--ip-forward=false`). Builds therefore run with `--network=host`. It is stopped afterwards (its mounts and
cgroups with it) and dies with its parent.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness.bounded import until
from harness.child_process import die_with_parent
from harness.k8s_binaries import cache_dir

_START_TIMEOUT = 60.0
_LOCK_TIMEOUT = 3600.0  # a cold build of every image takes minutes
_STOP_TIMEOUT = 30.0
DEBIAN_CLIENT = Path("/usr/bin/docker")  # docker.io 20.10: BuildKit built in


class DockerUnavailable(RuntimeError):
    """No Docker engine answers and none can be started here (the message says what is missing)."""


@dataclass
class DockerEngine:
    """A reachable engine and a client that builds with BuildKit."""

    client: str
    host: str | None  # DOCKER_HOST for the client; None: the client's default
    started_here: bool
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 600,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | int | None = subprocess.PIPE,
    ) -> subprocess.CompletedProcess[bytes]:
        argv = [self.client, *args]
        proc = subprocess.run(
            argv, env=self.env, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-3000:]}"
            )
        return proc

    def image_id(self, ref: str) -> str | None:
        """The image's ID (sha256:...), or None when the engine does not have it."""
        proc = self.run("image", "inspect", "--format", "{{.Id}}", ref, check=False, timeout=60)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _client_env(host: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["DOCKER_BUILDKIT"] = "1"
    if host is not None:
        env["DOCKER_HOST"] = host
    return env


def _has_buildx(client: str) -> bool:
    try:
        proc = subprocess.run([client, "buildx", "version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def buildkit_client() -> str:
    """A docker client that builds with BuildKit, or DockerUnavailable naming what to install."""
    on_path = shutil.which("docker")
    if on_path and _has_buildx(on_path):
        return on_path
    if DEBIAN_CLIENT.exists():
        return str(DEBIAN_CLIENT)
    if on_path:
        raise DockerUnavailable(
            f"{on_path} has no buildx, so it cannot build with BuildKit (the Dockerfiles use RUN --mount): "
            "install the buildx plugin, or Debian's docker.io (its /usr/bin/docker has BuildKit built in)"
        )
    raise DockerUnavailable("no docker client: install Docker (with buildx) or Debian's docker.io")


def _answers(client: str, host: str | None) -> bool:
    try:
        proc = subprocess.run(
            [client, "info", "--format", "{{.ServerVersion}}"],
            env=_client_env(host),
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _run_dir() -> Path:
    return Path("/run/ebb-docker")


def _unmount_below(*roots: Path) -> None:
    """Mounts dockerd leaves under its directories when it is killed (its data root bind-mounted onto
    itself, build containers' root filesystems, the build secrets' tmpfs): deepest first, lazily."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
            points.append(point)
    for point in sorted(points, key=lambda p: p.count("/"), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)


def _docker_cgroups() -> list[Path]:
    """The `docker` cgroups dockerd makes in each cgroup v1 hierarchy for its (build) containers."""
    base = Path("/sys/fs/cgroup")
    return [d / "docker" for d in base.iterdir() if (d / "docker").is_dir()] if base.is_dir() else []


def _remove_cgroups(created: list[Path]) -> None:
    for top in created:
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def _start_dockerd(client: str) -> tuple[subprocess.Popen[bytes], str, IO[bytes]]:
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    if not Path(dockerd).exists():
        raise DockerUnavailable(
            "no Docker engine answers and dockerd is not installed: `apt-get install docker.io` (the "
            "cluster tier's `make cluster-packages` does it), or start your Docker engine"
        )
    if os.geteuid() != 0:
        raise DockerUnavailable("no Docker engine answers, and only root can start one here (dockerd)")
    run = _run_dir()
    run.mkdir(parents=True, exist_ok=True)
    data_root = cache_dir() / "docker"
    data_root.mkdir(parents=True, exist_ok=True)
    _unmount_below(data_root, run)  # left by a dockerd of ours that was killed
    sock = run / "docker.sock"
    host = f"unix://{sock}"
    log_path = run / "dockerd.log"
    log = log_path.open("wb")
    argv = [
        dockerd,
        f"--host={host}",
        f"--data-root={data_root}",
        f"--exec-root={run / 'exec'}",
        f"--pidfile={run / 'dockerd.pid'}",
        # Builds use the host's network (docker build --network=host): dockerd changes nothing on it.
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--storage-driver=overlay2",
    ]
    print(f"    starting dockerd for the builds (data root {data_root}, log {log_path})", flush=True)
    popen = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    with contextlib.suppress(TimeoutError):  # answered, or exited: told apart below
        until(
            "dockerd answering",
            lambda: popen.poll() is not None or _answers(client, host),
            _START_TIMEOUT,
            0.5,
        )
    if popen.poll() is not None or not _answers(client, host):
        _stop(popen)
        log.close()
        tail = log_path.read_text(errors="replace")[-3000:]
        raise DockerUnavailable(
            f"dockerd did not answer within {_START_TIMEOUT:.0f} s (exit status {popen.returncode}); "
            f"end of {log_path}:\n{tail}"
        )
    return popen, host, log


def _stop(popen: subprocess.Popen[bytes]) -> None:
    if popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGTERM)
        try:
            popen.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()


def _locked(lock: IO[str]) -> bool:
    """Take the exclusive lock now, or BlockingIOError."""
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return True


@contextlib.contextmanager
def docker_engine() -> Iterator[DockerEngine]:
    """A Docker engine for the block: the running one, else a private dockerd stopped afterwards."""
    client = buildkit_client()
    if _answers(client, os.environ.get("DOCKER_HOST")):
        yield DockerEngine(
            client, os.environ.get("DOCKER_HOST"), False, _client_env(os.environ.get("DOCKER_HOST"))
        )
        return
    # One private dockerd per cache at a time (two clones building at once share it): wait, bounded.
    cache_dir().mkdir(parents=True, exist_ok=True)
    with (cache_dir() / "docker.lock").open("w") as lock:
        try:
            until("the docker lock", lambda: _locked(lock), _LOCK_TIMEOUT, 1, ignore=(BlockingIOError,))
        except TimeoutError:
            raise DockerUnavailable(
                f"another build has held {cache_dir() / 'docker.lock'} for {_LOCK_TIMEOUT:.0f} s"
            ) from None
        cgroups_before = set(_docker_cgroups())
        popen, host, log = _start_dockerd(client)
        try:
            yield DockerEngine(client, host, True, _client_env(host))
        finally:
            _stop(popen)
            log.close()
            _unmount_below(cache_dir() / "docker", _run_dir())
            _remove_cgroups([c for c in _docker_cgroups() if c not in cgroups_before])
        print("    dockerd stopped", flush=True)
