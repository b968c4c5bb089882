"""What the broker benchmarks share: a process's CPU time, whether Apache Kafka can be started here, and
ratio rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (every thread), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kafka_available() -> str | None:
    """None when Apache Kafka can be started, else why not."""
    try:
        from harness.kafka import libs_dir
    except ImportError:
        return "harness/kafka.py is not on this branch"
    try:
        libs_dir()
    except Exception as exc:
        return f"Apache Kafka is not assembled ({exc}); run `make harness-kafka`"
    return None


def ratio(labels: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`labels`, then a / b for every float figure both rows have (MB/s left out: the same ratio as
    records/s)."""
    figures = [k for k, v in a.items() if isinstance(v, float) and k in b and not k.endswith("_MB_s")]
    return {**labels, **{k: a[k] / b[k] if b[k] else float("nan") for k in figures}}
