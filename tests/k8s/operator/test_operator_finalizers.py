"""The operator holds no object with a finalizer, so deleting one (or its namespace) never waits for the
operator, and the per-object work it runs on a schedule still ends with the object (handlers/lifetime.py):
a deleted CompactionConfig stops correcting drift, a deleted RetentionPolicy's runner is cancelled. The
finalizer an earlier version put on objects is taken off."""

from __future__ import annotations

import yaml

from harness.bounded import wait_until
from harness.ebb_broker import EbbBroker
from tests.e2e.operator.operator_kafka import create_topic, unique
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, ready
from tests.k8s.operator.test_operator_compaction_config import _configs, _is_ready, _set

LAG = "min.compaction.lag.ms"


def test_no_finalizer_an_earlier_one_taken_off_and_per_object_work_ends_with_its_object(
    operator_ebb_broker: EbbBroker, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    """One operator for the three checks (each would start one of its own)."""
    bootstrap = operator_ebb_broker.bootstrap
    prefix = unique("fin")
    gone, kept, old = f"{prefix}-gone", f"{prefix}-kept", f"{prefix}-old"
    for topic in (gone, kept, old):
        create_topic(bootstrap, topic, 1)
    for topic in (gone, kept):
        spec = {
            "cluster": {"bootstrapServers": bootstrap},
            "topics": {"include": [topic]},
            "minCompactionLag": "1h",
        }
        assert objects.apply("CompactionConfig", topic, spec).returncode == 0
    # As an earlier Ebb left it: with its finalizer.
    earlier = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "CompactionConfig",
        "metadata": {"name": old, "finalizers": ["ebb.dev/operator"]},
        "spec": {"cluster": {"bootstrapServers": bootstrap}, "topics": {"include": [old]}},
    }
    objects.cp.kubectl("apply", "-n", objects.namespace, "-f", "-", stdin=yaml.safe_dump(earlier))
    create_topic(bootstrap, prefix, 1)  # DeleteRecords on a compacted topic is refused (POLICY_VIOLATION)
    dr = {
        "cluster": {"bootstrapServers": bootstrap},
        "partitions": [{"topic": prefix, "partition": 0, "offset": 0}],
    }
    assert objects.apply("DeleteRecords", prefix, dr).returncode == 0
    policy = {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": ["nothing-.*"]},
        "consumedRetention": "1h",
        "suspend": True,
    }
    assert objects.apply("RetentionPolicy", "idle", policy).returncode == 0
    for topic in (gone, kept):
        objects.wait("compactionconfigs", topic, _is_ready)
    objects.wait("compactionconfigs", old, lambda o: not o["metadata"].get("finalizers"))
    objects.wait("deleterecords", prefix, lambda o: o.get("status", {}).get("phase") == "Succeeded")
    objects.wait("retentionpolicies", "idle", lambda o: ready(o).get("reason") == "Suspended")
    for plural, name in (
        ("compactionconfigs", gone),
        ("compactionconfigs", kept),
        ("deleterecords", prefix),
        ("retentionpolicies", "idle"),
    ):
        assert not objects.get(plural, name)["metadata"].get("finalizers"), (plural, name)

    objects.cp.kubectl("delete", "-n", objects.namespace, "compactionconfig", gone, "--timeout=20s")
    objects.cp.kubectl("delete", "-n", objects.namespace, "retentionpolicy", "idle", "--timeout=20s")
    # The only policy this operator serves: kopf logs when its daemon ends, by returning on the stop
    # request or, still busy then, cancelled (cancellation_timeout without a backoff).
    ended = (
        "Daemon 'retentionpolicy-runner' has exited on request",
        "Daemon 'retentionpolicy-runner' is cancelled",
    )

    def runner_ended() -> bool:
        log = ebb_operator.log.read_text(errors="replace")
        return any(line in log for line in ended)

    wait_until("the deleted policy's runner to end", runner_ended, 30)
    _set(bootstrap, gone, LAG, "5")
    # Two corrections of the kept config's topic: its timer ran twice since, the deleted one's would have
    # run at least once (same interval) and put the lag back.
    for _ in range(2):
        _set(bootstrap, kept, LAG, "5")
        wait_until("the kept config's correction", lambda: _configs(bootstrap, kept)[LAG] == "3600000", 30)
    assert _configs(bootstrap, gone)[LAG] == "5", "the deleted CompactionConfig still corrects its topic"
