"""Where the repository's files are, for tests that read them (charts, CRDs, Dockerfiles)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
