"""What the chart ships for monitoring: the Grafana dashboard ConfigMap and the PrometheusRule.

`promtool test rules` (Prometheus' own rule tester, built by harness/node/build.sh) runs each alert
against series shaped as the operator exports them; every query of the dashboard and of the rules is
valid PromQL (`promtool check rules`) and names only metrics the operator or the broker export."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY as OPERATOR_REGISTRY
from prometheus_client import CollectorRegistry

import ebb_operator.metrics  # noqa: F401 - registers the operator's metrics
from ebb_broker.metrics import BrokerMetrics
from harness.k8s_binaries import Binaries
from harness.node_binaries import NodeBinaries
from tests.cluster.conftest import CHART, NAMESPACE, RELEASE, Release

pytestmark = pytest.mark.timeout(300)


def _render(*options: str) -> list[dict[str, Any]]:
    helm = Binaries.from_cache().helm
    out = subprocess.run(
        [str(helm), "template", "ebb", str(CHART), "--namespace", "ebb", *options],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [d for d in yaml.safe_load_all(out) if d]


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    promtool = NodeBinaries.from_cache()["promtool"]
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def _rule_groups(**values: str) -> list[dict[str, Any]]:
    options = ["--set", "prometheusRule.enabled=true"]
    for key, value in values.items():
        options += ["--set", f"prometheusRule.{key}={value}"]
    (rule,) = [d for d in _render(*options) if d["kind"] == "PrometheusRule"]
    return rule["spec"]["groups"]


RUNS = 'ebb_operator_policy_runs_total{namespace="team",policy="orders",outcome="%s"}'
FAILURES = 'ebb_operator_reconcile_failures_total{kind="%s",reason="%s"}'
HELD = 'ebb_operator_policy_held_partitions_by_group{namespace="team",policy="orders",group="%s"}'

RUN_FAILED = "Its status.lastCompletedRun.message and Ready condition say why; the next run backs off."
DELETE_FAILED = (
    "kubectl get deleterecords -A shows which; their status.partitions carry each partition's error."
)


def _run_failed(policy: str) -> dict[str, Any]:
    return {
        "exp_labels": {"severity": "warning", "namespace": "team", "policy": policy},
        "exp_annotations": {
            "summary": f"RetentionPolicy team/{policy}: a run failed",
            "description": RUN_FAILED,
        },
    }


# One minute per sample. `_` is a missing sample (the series does not exist yet).
ALERT_TESTS = {
    "interval": "1m",
    "input_series": [
        # billing holds 2 partitions for 30 h; audit held one for 2 h only.
        {"series": HELD % "billing", "values": "2x1800"},
        {"series": HELD % "audit", "values": "1x120"},
        # Succeeded runs only, for hours: no alert.
        {"series": RUNS % "Succeeded", "values": "1+1x1800"},
        # A first failure at 10 h: the series is born at 1 (increase() alone would miss it)...
        {"series": RUNS % "Failed", "values": "_x600 1x1200"},
        # ...and a second failure at 20 h of a series older than the window.
        {"series": 'ebb_operator_policy_runs_total{namespace="team",policy="clicks",outcome="Failed"}',
         "values": "1x1200 2x600"},
        # DeleteRecords: a first failure at 5 h; a CompactionConfig failure must not alert, nor expected
        # refusals (the guard, the grant, a waiting cluster) that start and grow meanwhile.
        {"series": FAILURES % ("DeleteRecords", "PartiallyFailed"), "values": "_x300 1x1500"},
        {"series": FAILURES % ("CompactionConfig", "KafkaError"), "values": "_x300 1x1500"},
        {"series": FAILURES % ("DeleteRecords", "GuardRefused"), "values": "_x290 1+1x1510"},
        {"series": FAILURES % ("DeleteRecords", "Forbidden"), "values": "_x290 1+1x1510"},
        {"series": FAILURES % ("DeleteRecords", "ClusterNotFound"), "values": "_x290 1+1x1510"},
    ],
    "alert_rule_test": [
        {"eval_time": "23h", "alertname": "EbbPartitionsHeld", "exp_alerts": []},
        {"eval_time": "25h", "alertname": "EbbPartitionsHeld", "exp_alerts": [
            {"exp_labels": {
                "severity": "warning", "namespace": "team", "policy": "orders", "group": "billing"
             },
             "exp_annotations": {
                 "summary": "RetentionPolicy team/orders: group billing has held 2 partitions back for 24h",
                 "description": "The group has not read or committed them, so their data stays on disk. The "
                 "policy's status.topics (held, limiting) lists the partitions and the group's lag.",
             }},
        ]},
        {"eval_time": "9h", "alertname": "EbbRetentionRunFailed", "exp_alerts": []},
        {"eval_time": "10h30m", "alertname": "EbbRetentionRunFailed", "exp_alerts": [_run_failed("orders")]},
        {"eval_time": "15h", "alertname": "EbbRetentionRunFailed", "exp_alerts": []},
        {"eval_time": "20h30m", "alertname": "EbbRetentionRunFailed", "exp_alerts": [_run_failed("clicks")]},
        {"eval_time": "5h10m", "alertname": "EbbDeleteRecordsFailed", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "reason": "PartiallyFailed"},
             "exp_annotations": {
                 "summary": "DeleteRecords failed (PartiallyFailed)", "description": DELETE_FAILED
             }},
        ]},
        {"eval_time": "6h", "alertname": "EbbDeleteRecordsFailed", "exp_alerts": []},
    ],
}  # fmt: skip


def test_promtool_tests_every_alert(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": _rule_groups()}))
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [ALERT_TESTS]}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = _promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_thresholds_are_values(tmp_path: Path) -> None:
    (held, failed_run, failed_delete) = _rule_groups(
        heldFor="2h", failedRunWindow="3h", failedDeleteWindow="4h"
    )[0]["rules"]
    assert held["for"] == "2h" and "for 2h" in held["annotations"]["summary"]
    assert "[3h]" in failed_run["expr"] and "offset 3h" in failed_run["expr"]
    assert "[4h]" in failed_delete["expr"] and "offset 4h" in failed_delete["expr"]


def _exported() -> set[str]:
    """Names of every series the operator and the broker export (a counter's with its _total)."""
    broker = BrokerMetrics()
    broker.watch_partitions(lambda: [])
    names: set[str] = set()
    registries: list[CollectorRegistry] = [OPERATOR_REGISTRY, broker.registry]
    for registry in registries:
        for family in registry.collect():
            suffixes = {
                "counter": ["_total"],
                "histogram": ["_bucket", "_sum", "_count"],
                "info": ["_info"],
            }.get(family.type, [""])
            names.update(family.name + s for s in suffixes)
    return names


def _dashboard() -> dict[str, Any]:
    (configmap,) = [
        d for d in _render() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "ebb-dashboard"
    ]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    return json.loads(configmap["data"]["ebb.json"])


def test_every_query_is_promql_over_exported_metrics(tmp_path: Path) -> None:
    dashboard = _dashboard()
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(queries) >= 12
    queries += [r["expr"] for g in _rule_groups() for r in g["rules"]]
    # Grafana's range variables, as Grafana substitutes them.
    concrete = [q.replace("$__rate_interval", "5m").replace("$__range", "24h") for q in queries]
    rules = [{"record": f"ebb:check:{i}", "expr": q} for i, q in enumerate(concrete)]
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump({"groups": [{"name": "check", "rules": rules}]}))
    result = _promtool("check", "rules", "queries.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    used = {name for q in queries for name in re.findall(r"\bebb_[a-z_]+\b", q)}
    assert used - _exported() == set(), f"queries name metrics nobody exports: {used - _exported()}"
    # The dashboard covers what it promises: reclaimed bytes, held partitions and their groups, run
    # outcomes, what each group pins and the unread records lost, budgets, broker disk, the operator's
    # reconcile times and leader.
    for metric in (
        "ebb_operator_bytes_reclaimed_total",
        "ebb_operator_policy_held_partitions",
        "ebb_operator_policy_held_partitions_by_group",
        "ebb_operator_policy_runs_total",
        "ebb_log_size_bytes",
        "ebb_operator_reconcile_duration_seconds_bucket",
        "ebb_operator_leader",
        "ebb_operator_policy_limiting_pinned_bytes",
        "ebb_operator_policy_limiting_oldest_unread_age_seconds",
        "ebb_operator_unread_records_deleted_total",
        "ebb_operator_policy_over_budget_partitions",
    ):
        assert metric in used, metric


def test_the_release_ships_the_dashboard(release: Release) -> None:
    configmaps = release.cluster.kubectl_json(
        "get",
        "configmaps",
        "-n",
        NAMESPACE,
        "-l",
        f"grafana_dashboard=1,app.kubernetes.io/instance={RELEASE}",
    )["items"]
    (configmap,) = configmaps
    assert json.loads(configmap["data"]["ebb.json"])["uid"] == "ebb-retention"
