"""CompactionConfig end to end: configs applied, drift corrected, later topics reached, conflicts and
missing settings reported, all by the operator under its RBAC-limited ServiceAccount."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from harness.bounded import wait_until
from tests.e2e.operator.operator_kafka import create_topic, unique
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, ready


def _configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in entries.items()}


def _set(bootstrap: str, topic: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)


def _synced_since(last: str) -> Callable[[dict[str, Any]], bool]:
    """A check that the object resynced: its lastSync moved on from `last`."""
    return lambda obj: obj["status"]["lastSync"] != last


def _is_ready(obj: dict[str, Any]) -> bool:
    return ready(obj).get("status") == "True"


def test_applied_drift_corrected_and_later_topics_reached(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    prefix = unique("cc")
    create_topic(kafka_bootstrap, f"{prefix}-a", 1)
    spec = {
        "cluster": {"bootstrapServers": kafka_bootstrap},
        "topics": {"include": [f"{prefix}-.*"]},
        "cleanupPolicy": "compact",
        "minCompactionLag": "1h",
        "tombstones": {"retention": "10m"},
    }
    assert objects.apply("CompactionConfig", "state", spec).returncode == 0

    obj = objects.wait("compactionconfigs", "state", _is_ready)
    assert obj["status"]["matchedTopics"] == 1 and obj["status"]["topics"][0]["state"] == "Applied"
    configs = _configs(kafka_bootstrap, f"{prefix}-a")
    assert configs["cleanup.policy"] == "compact"
    assert configs["min.compaction.lag.ms"] == "3600000" and configs["delete.retention.ms"] == "600000"

    _set(kafka_bootstrap, f"{prefix}-a", "min.compaction.lag.ms", "5")
    wait_until(
        "the drifted setting corrected",
        lambda: _configs(kafka_bootstrap, f"{prefix}-a")["min.compaction.lag.ms"] == "3600000",
        30,
        interval=0.3,
    )
    assert any(e["reason"] == "DriftCorrected" for e in objects.events("state"))

    create_topic(kafka_bootstrap, f"{prefix}-b", 1)
    wait_until(
        "a later topic reached",
        lambda: _configs(kafka_bootstrap, f"{prefix}-b")["cleanup.policy"] == "compact",
        30,
        interval=0.3,
    )
    objects.wait("compactionconfigs", "state", lambda o: o["status"].get("matchedTopics") == 2)
    assert "ebb_operator_configs_applied_total" in ebb_operator.metrics()


def test_second_config_on_the_same_topic_reports_conflict(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    topic = unique("shared")
    create_topic(kafka_bootstrap, topic, 1)
    cluster = {"bootstrapServers": kafka_bootstrap}
    first = {"cluster": cluster, "topics": {"include": [topic]}, "minCompactionLag": "1m"}
    assert objects.apply("CompactionConfig", "first", first).returncode == 0
    objects.wait("compactionconfigs", "first", _is_ready)
    second = {"cluster": cluster, "topics": {"include": [f"{topic}.*"]}, "minCompactionLag": "2h"}
    assert objects.apply("CompactionConfig", "second", second).returncode == 0

    obj = objects.wait("compactionconfigs", "second", lambda o: ready(o).get("reason") == "Conflict")

    assert obj["status"]["topics"][0] == {
        "topic": topic,
        "state": "Conflict",
        "message": f"Managed by {objects.namespace}/first",
    }
    # Both objects resync (their lastSync moves on) and the winner's setting stays.
    for name in ("first", "second"):
        synced = objects.get("compactionconfigs", name)["status"]["lastSync"]
        objects.wait("compactionconfigs", name, _synced_since(synced))
    assert _configs(kafka_bootstrap, topic)["min.compaction.lag.ms"] == "60000"


def test_kip87_setting_applied_on_ebb_and_unsupported_on_apache_kafka(
    kafka_bootstrap: str, kafka_kind: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    """Only ebb-broker has tombstone.null.value.enable; the operator finds out from DescribeConfigs."""
    topic = unique("kip87")
    create_topic(kafka_bootstrap, topic, 1)
    spec = {
        "cluster": {"bootstrapServers": kafka_bootstrap},
        "topics": {"include": [topic]},
        "cleanupPolicy": "compact,delete",
        "tombstones": {"nullValueIsTombstone": False},
    }
    assert objects.apply("CompactionConfig", "explicit", spec).returncode == 0

    expected = "Applied" if kafka_kind == "ebb-broker" else "Unsupported"
    obj = objects.wait("compactionconfigs", "explicit", lambda o: ready(o).get("reason") == expected)

    state = obj["status"]["topics"][0]
    configs = _configs(kafka_bootstrap, topic)
    if kafka_kind == "ebb-broker":
        assert state["state"] == "Applied" and configs["tombstone.null.value.enable"] == "false"
    else:
        assert state["state"] == "Unsupported" and "tombstone.null.value.enable" in state["message"]
        assert "tombstone.null.value.enable" not in configs
    # What the cluster does support is applied either way.
    assert set(configs["cleanup.policy"].split(",")) == {"compact", "delete"}
