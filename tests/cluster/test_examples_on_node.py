"""The three examples (examples/*.yaml) applied as the README says, reconciled by the operator pod against
the in-cluster broker, with a consumer pod reading `orders` throughout: after the DeleteRecords it
reads on from where it was, with no gap and no offset reset."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest

from harness.bounded import until, wait_until
from tests.cluster.conftest import EXAMPLES, POLL, TOOLBOX, Release, Say, start_client

pytestmark = pytest.mark.timeout(900)


def _records(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if "offset" in line]


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions", []):
        if c["type"] == kind:
            return c
    return None


@pytest.mark.usefixtures("spark_runs")  # the SparkApplication runs overlap this test's own Spark run
def test_examples_reconcile_and_a_consumer_reads_on_without_a_gap(release: Release, say: Say) -> None:
    began = time.monotonic()

    def phase(what: str) -> None:
        say(f"examples: {what} after {time.monotonic() - began:.1f} s")

    assert release.pod_json_lines(TOOLBOX, "create-topics", "orders:3", "customer-profiles:1") == [
        {"topic": "orders"},
        {"topic": "customer-profiles"},
    ]
    first = release.pod_json_lines(TOOLBOX, "produce", "orders", "90", "--prefix", "a", "--spread", "3")
    assert first[-1] == {"done": 90}, first[-3:]
    start_client(release, "billing-reader", "read-group", "orders", "billing")

    def read(count: int) -> list[dict[str, Any]] | None:
        lines = release.logs("billing-reader")
        committed = [line["committed"] for line in lines if "committed" in line]
        return lines if len(_records(lines)) >= count and committed else None

    def reader_log(_: object) -> str:
        return "\n" + release.kubectl("logs", "billing-reader", "--tail=20", check=False).stdout

    until("the reader to read the first 90 records", lambda: read(90), 120, interval=POLL, detail=reader_log)
    # Its group has committed the end of each partition: the guard lets the example delete up to there.
    wait_until(
        "billing's commits at 30, 30, 30",
        lambda: _committed(release) == {"0": 30, "1": 30, "2": 30},
        60,
        interval=POLL,
    )

    phase("90 records read and committed by the reader pod")
    release.kubectl(
        "apply",
        "-f", str(EXAMPLES / "delete-records.yaml"),
        "-f", str(EXAMPLES / "compaction-config.yaml"),
        "-f", str(EXAMPLES / "retention-policy.yaml"),
    )  # fmt: skip

    def dr_done() -> dict[str, Any] | None:
        obj = release.get("deleterecords", "orders-consumed")
        return obj if (obj.get("status") or {}).get("phase") in {"Succeeded", "Failed"} else None

    status = until("the DeleteRecords example", dr_done, 120, interval=POLL)["status"]
    assert status["phase"] == "Succeeded", status
    assert sorted((p["partition"], p["lowWatermark"]) for p in status["partitions"]) == [
        (0, 30),
        (1, 30),
        (2, 30),
    ]
    assert release.pod_json_lines(TOOLBOX, "log-start", "orders") == [{"0": 30, "1": 30, "2": 30}]
    phase("DeleteRecords example succeeded")

    second = release.pod_json_lines(TOOLBOX, "produce", "orders", "90", "--prefix", "b", "--spread", "3")
    assert second[-1] == {"done": 90}, second[-3:]
    lines = until(
        "the reader to read on to 180 records", lambda: read(180), 120, interval=POLL, detail=reader_log
    )
    assert not [line for line in lines if "error" in line], lines
    offsets: dict[int, list[int]] = defaultdict(list)
    for record in _records(lines):
        offsets[record["partition"]].append(record["offset"])
    assert {p: sorted(o) for p, o in offsets.items()} == {p: list(range(60)) for p in range(3)}

    phase("the reader read on without a gap")

    def cc_ready() -> dict[str, Any] | None:
        obj = release.get("compactionconfig", "customer-profiles")
        condition = _condition(obj, "Ready")
        return obj if condition and condition["status"] == "True" else None

    cc = until("the CompactionConfig example", cc_ready, 120, interval=POLL)["status"]
    assert [(t["topic"], t["state"]) for t in cc["topics"]] == [("customer-profiles", "Applied")]
    (configs,) = release.pod_json_lines(TOOLBOX, "describe-topic-configs", "customer-profiles")
    assert configs["cleanup.policy"] == "compact"
    assert configs["min.compaction.lag.ms"] == str(10 * 60 * 1000)

    phase("CompactionConfig example applied")

    # The RetentionPolicy example: a dry run of the Local engine (PySpark inside the operator pod).
    def rp_ran() -> dict[str, Any] | None:
        obj = release.get("retentionpolicy", "orders")
        last = (obj.get("status") or {}).get("lastRun") or {}
        return obj if last.get("outcome") not in (None, "Running") else None

    def operator_log(_: object) -> str:
        return "\n" + release.kubectl("logs", "deploy/ebb-operator", "--tail=40", check=False).stdout

    ran = until("the RetentionPolicy example's first run", rp_ran, 300, interval=POLL, detail=operator_log)
    policy = ran["status"]
    last = policy["lastRun"]
    assert (last["engine"], last["outcome"]) == ("Local", "Succeeded"), policy
    # billing has read everything, but nothing is older than consumedRetention (1h): no cut yet.
    assert last["message"].startswith("dry run: would delete 0 records"), last
    assert policy["summary"]["topics"] == 1 and policy["summary"]["deletableRecords"] == 0, policy
    phase("RetentionPolicy example's dry run (Local engine) done")


def _committed(release: Release) -> dict[str, int]:
    committed: dict[str, int] = {}
    for line in release.logs("billing-reader"):
        committed.update(line.get("committed", {}))
    return committed
