"""Ebb's releases, for what compares against the previous one: the CRD compatibility check
(tools/crd_compat.py) and the cluster tier's upgrade test, which builds that release's chart and images
from a git worktree of its commit. By commit, not by tag: a CI clone may have no tags. CHANGELOG.md names
the same commits (tests/unit/delivery/test_crd_compat.py checks it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    version: str
    commit: str


PREVIOUS = Release("0.1.0", "703119903042578e6c8640aad11bc14e484043ea")
