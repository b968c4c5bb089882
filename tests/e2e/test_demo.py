"""`make demo` runs to completion on this machine and shows what a user came to see: bytes reclaimed by
a consumer-aware DeleteRecords, the group that held a partition back, and the CompactionConfig applied."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_script_reclaims_bytes_and_names_the_group_holding_back() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The same command `make demo` runs (mk/demo.mk), after its setup prerequisites.
    result = subprocess.run(
        [sys.executable, "-m", "demo.end_to_end"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-4000:]
    reclaimed = re.search(r"reclaimed (\d+) bytes in total", out)
    assert reclaimed and int(reclaimed.group(1)) > 0, out
    assert re.search(r"orders\s+\S+ \S+\s+\S+ \S+\s+[1-9]", out), "no per-topic reclaimed bytes for orders"
    # analytics committed only 40% of orders-2: the guard refuses that partition and says who holds it.
    assert re.search(r"orders-2: .*held back: GuardRefused: .*analytics", out), out
    assert "orders-0: requested 1500, low watermark 1500" in out
    assert re.search(r"customer-profiles\s+Applied", out) or "topic customer-profiles Applied" in out
    assert "PHASE" in out and "PartiallyFailed" in out  # kubectl get with the printer columns
    # The RetentionPolicy example (a dry run): reporting never committed on orders-2, so it holds it.
    assert re.search(r"orders-2: held \(NoCommit\) by reporting", out), out
    # A tenant reaching outside its KafkaCluster grant is refused at kubectl apply, by name; nothing is
    # stored and nothing reaches Kafka.
    forbidden = r"denied the request: spec.partitions\[0\].topic 'orders': outside the topics granted"
    assert re.search(forbidden, out), out
    assert "DeleteRecords stored in team-payments: none" in out
    untouched = r"orders log start offsets before (\{.*\}), after \1: nothing was sent to Kafka"
    assert re.search(untouched, out), out
    assert "demo finished" in out
