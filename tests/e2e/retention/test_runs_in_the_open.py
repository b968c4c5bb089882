"""A RetentionPolicy's runs in the open (issue 13), on a real kube-apiserver against ebb-broker.

- An empty match is a normal run: outcome NothingToDelete, a TopicsMatched condition saying so.
- A failing run says so: outcome Failed, Ready=False with the reason and the cause, a warning Event, the
  metrics, and retries backing off exponentially.
- The last completed run stays visible while the next one runs; each run names the groups that limit its
  cut, with their lag, in status and as Prometheus gauges; the Admin-API offsets source (the default)
  remembers across runs since when a group has been empty, so `inactiveAfter` ignores it once that long.
"""

from __future__ import annotations

import calendar
import itertools
import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer

from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique
from tests.e2e.retention.policies import apply_policy

HOUR_MS = 3_600_000


def _get(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = cp.kubectl_json("get", "-n", ns, "retentionpolicy", name)
    return obj


def _until(
    cp: ControlPlane, ns: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 600
) -> dict[str, Any]:
    return wait_until(
        name,
        lambda: _get(cp, ns, name),
        timeout,
        until=check,
        interval=0.3,
        detail=lambda obj: "\n" + yaml.safe_dump(obj.get("status")),
    )


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in _status(obj)["conditions"] if c["type"] == kind)


def _ended(previous: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """A run other than `previous` has ended (lastCompletedRun: with runs longer than the interval, the
    next one starts at once, and lastRun is `Running` at almost every look)."""

    def check(obj: dict[str, Any]) -> bool:
        done = _status(obj).get("lastCompletedRun") or {}
        return done.get("id") not in (None, previous)

    return check


def _metrics(operator: OperatorProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as r:
        lines = r.read().decode().splitlines()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in lines
        if line and not line.startswith("#")
    }


def _seconds(stamp: str) -> float:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def test_an_empty_match_and_a_failing_run_say_so(
    control_plane: ControlPlane,
    k8s_namespace: str,
    operator_ebb_broker: EbbBroker,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cp, ns, bootstrap = control_plane, k8s_namespace, operator_ebb_broker.bootstrap
    common = {"consumedRetention": "1h", "schedule": {"interval": "1h"}}
    apply_policy(cp, ns, "nothing", {**common, "cluster": {"bootstrapServers": bootstrap},
                                "topics": {"include": [unique("no-such-topic")]}})  # fmt: skip
    missing = unique("missing")
    apply_policy(cp, ns, "broken", {**common, "clusterRef": {"name": missing}, "topics": {"include": ["t"]}})
    operator = start_operator(bootstrap, EBB_RETENTION_BACKOFF_SECONDS="2")

    nothing = _until(cp, ns, "nothing", _ended())
    assert _status(nothing)["lastRun"]["outcome"] == "NothingToDelete"
    assert _status(nothing)["lastCompletedRun"] == _status(nothing)["lastRun"]
    ready, matched = _condition(nothing, "Ready"), _condition(nothing, "TopicsMatched")
    assert (ready["status"], ready["reason"]) == ("True", "NothingToDelete")
    assert (matched["status"], matched["reason"]) == ("False", "NothingMatched")

    # Four failed runs in a row, each seen start to end: the waits between them double (2, 4, 8 s).
    runs: dict[str, dict[str, Any]] = {}
    broken = _until(
        cp, ns, "broken", lambda o: _record(runs, o) and _status(o).get("failures", 0) >= 4, timeout=180
    )
    last = _status(broken)["lastRun"]
    assert last["outcome"] == "Failed" and _status(broken)["lastCompletedRun"] == last
    assert f"KafkaCluster {missing} does not exist" in last["message"]
    ready = _condition(broken, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ClusterNotFound")
    assert f"KafkaCluster {missing} does not exist" in ready["message"]
    ended = sorted((r for r in runs.values() if r.get("completedAt")), key=lambda r: r["startedAt"])
    assert len(ended) >= 4, runs
    waits = [_seconds(b["startedAt"]) - _seconds(a["completedAt"]) for a, b in itertools.pairwise(ended)]
    # (timestamps have whole seconds: a wait of w seconds shows as w-1 to w+1)
    assert waits[0] >= 1 and waits[1] >= 3 and waits[2] >= 7, waits

    events = cp.kubectl_json("get", "events", "-n", ns, "--field-selector", "involvedObject.name=broken")
    warnings = [e for e in events["items"] if e["type"] == "Warning" and e["reason"] == "ClusterNotFound"]
    assert warnings and f"KafkaCluster {missing} does not exist" in warnings[0]["message"]
    metrics = _metrics(operator)
    runs_failed = f'ebb_operator_policy_runs_total{{namespace="{ns}",outcome="Failed",policy="broken"}}'
    assert metrics[runs_failed] >= 4
    assert (
        metrics['ebb_operator_reconcile_failures_total{kind="RetentionPolicy",reason="ClusterNotFound"}'] >= 4
    )


def _record(runs: dict[str, dict[str, Any]], obj: dict[str, Any]) -> bool:
    """Remember every run seen (lastRun by id), so the gaps between runs can be measured."""
    last = _status(obj).get("lastRun")
    if last:
        runs[last["id"]] = last
    return True


@pytest.mark.timeout(1200)  # two Spark runs; slow only on a busy machine
def test_runs_stay_visible_and_empty_groups_are_remembered(
    control_plane: ControlPlane,
    k8s_namespace: str,
    operator_ebb_broker: EbbBroker,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    """`gone` (empty, at 10) is counted on the first run, which the operator then remembers; a run 3 s
    later ignores it (inactiveAfter 3s), and the cut moves up to `keeper` (required, at 30). The second
    run is started by a spec change, which runs at once rather than after the interval."""
    cp, ns, bootstrap = control_plane, k8s_namespace, operator_ebb_broker.bootstrap
    topic, keeper, gone = unique("open"), unique("keeper"), unique("gone")
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for i in range(50):  # 40 records older than consumedRetention, then 10 fresh ones
        producer.produce(topic, value=b"v" * 100, partition=0, timestamp=old + i if i < 40 else 0)
    assert producer.flush(30) == 0
    commit(bootstrap, keeper, [(topic, 0, 30)])
    commit(bootstrap, gone, [(topic, 0, 10)])
    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": [topic]},
        "consumers": {"include": [keeper, gone], "required": [keeper], "inactiveAfter": "3s"},
        "consumedRetention": "1h",
        "schedule": {"interval": "1m"},
    }  # fmt: skip
    apply_policy(cp, ns, "open", spec)
    operator = start_operator(bootstrap)

    first = _status(_until(cp, ns, "open", _ended()))
    run_id = first["lastCompletedRun"]["id"]
    assert (first["lastCompletedRun"]["outcome"], first["planRun"]) == ("Succeeded", run_id), first
    assert log_start(bootstrap, topic, 0) >= 10
    (entry,) = first["topics"]
    assert [(g["group"], g["lagRecords"], g["lagBytes"] > 0) for g in entry["limiting"]] == [(gone, 40, True)]
    series = f'namespace="{ns}",policy="open",topic="{topic}"'
    memory = cp.kubectl_json("get", "configmap", "-n", ns, "open-groups")
    empty_since_ms = json.loads(memory["data"]["emptySince.json"])[gone]

    # Once `gone` has been empty for longer than inactiveAfter, a changed spec starts the next run at
    # once: while it runs, the last completed one stays, with its plan.
    wait_until(
        "gone empty for 3 s", lambda: time.time() * 1000 - empty_since_ms, 30, until=lambda ms: ms > 3500
    )
    apply_policy(cp, ns, "open", {**spec, "schedule": {"interval": "2m"}})

    def next_running(o: dict[str, Any]) -> bool:
        last = _status(o).get("lastRun") or {}
        return last.get("id") != run_id and last.get("outcome") == "Running"

    during = _status(_until(cp, ns, "open", next_running, timeout=120))
    assert during["lastCompletedRun"]["id"] == run_id
    assert during["planRun"] == run_id and during["topics"] == first["topics"]
    gauge = _metrics(operator).get(f'ebb_operator_policy_limiting_lag_records{{group="{gone}",{series}}}')
    assert gauge == 40

    second = _status(_until(cp, ns, "open", _ended(run_id)))
    assert second["lastCompletedRun"]["outcome"] == "Succeeded"
    assert second["planRun"] == second["lastCompletedRun"]["id"]
    assert log_start(bootstrap, topic, 0) == 30, "gone, seen empty for longer than inactiveAfter, still held"
    (entry,) = second["topics"]
    assert [(g["group"], g["lagRecords"]) for g in entry["limiting"]] == [(keeper, 20)]
    metrics = _metrics(operator)
    assert metrics[f'ebb_operator_policy_limiting_lag_records{{group="{keeper}",{series}}}'] == 20
    assert f'ebb_operator_policy_limiting_lag_records{{group="{gone}",{series}}}' not in metrics
