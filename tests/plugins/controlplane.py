"""pytest plugin: one real control plane per test session, for the k8s and e2e tiers.

Registered in tests/conftest.py. The control plane starts on first use only, so a run of the unit tier
never builds or starts it; a missing build is an error naming `make harness-k8s`, never a skip.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator

import pytest

from harness.controlplane import ControlPlane, running_control_plane

_namespaces = itertools.count(1)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver for the whole session; its logs stay in pytest's temporary directory."""
    with running_control_plane(tmp_path_factory.mktemp("controlplane")) as cp:
        print(f"\ncontrol plane {cp.server} ready in {cp.startup_seconds:.1f}s")
        yield cp
    # Keep the logs for a failed run, not etcd's preallocated WAL and database (over 100 MB a session).
    shutil.rmtree(cp.workdir / "etcd", ignore_errors=True)


@pytest.fixture
def k8s_namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> str:
    """A fresh namespace for one test. It is not deleted afterwards: without the namespace controller
    (kube-controller-manager) a deleted namespace would stay Terminating, and names never repeat."""
    name = f"t{next(_namespaces)}-{request.node.name.lower()}"
    name = "".join(c if c.isalnum() else "-" for c in name)[:63].strip("-")
    control_plane.kubectl("create", "namespace", name)
    return name
