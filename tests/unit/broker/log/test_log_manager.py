"""LogManager: topics on disk, checkpoints, restart, retention across logs (Kafka's LogManagerTest)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ebb_broker.log import RecordsDeleted
from ebb_broker.log.checkpoint import atomic_write, read_offsets
from ebb_broker.log.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    PartitionLimitError,
    PolicyViolationError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from tests.unit.broker.log.log_helpers import T0, Clock, batch, read_all


def test_create_get_and_persist_topics(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    meta = mgr.create_topic("orders", 3, {"retention.ms": "3600000"})
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_dir()) == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]
    doc = json.loads((tmp_path / "data" / "ebb-topics.json").read_text())
    assert doc["topics"]["orders"] == {
        "id": str(meta.topic_id),
        "partitions": 3,
        "config": {"retention.ms": "3600000"},
    }
    with pytest.raises(TopicExistsError):
        mgr.create_topic("orders", 1, {})
    with pytest.raises(UnknownTopicOrPartitionError):
        mgr.get_log("orders", 3)
    mgr.get_log("orders", 1).append(batch(b"a", b"b"))
    mgr.close()
    again = manager()
    assert again.topics()["orders"].partitions == 3
    assert again.topic_config("orders").retention_ms == 3_600_000
    assert again.get_log("orders", 1).log_end_offset == 2


def test_bad_topic_requests_change_nothing(manager) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    with pytest.raises(InvalidConfigError, match=re.escape("unknown topic config 'retention.mss'")):
        mgr.create_topic("t", 1, {"retention.mss": "1"})
    with pytest.raises(InvalidTopicError, match="characters other than ASCII alphanumerics"):
        mgr.create_topic("a/b", 1, {})
    with pytest.raises(InvalidConfigError, match="may not exceed"):
        mgr.create_topic("t", 1, {"retention.ms": "1000", "retention.commitoffset.ms": "2000"})
    assert mgr.topics() == {}
    mgr.create_topic("t", 1, {})
    with pytest.raises(InvalidConfigError):
        mgr.alter_topic_config("t", {"segment.bytes": "-5"})
    assert mgr.topic_config("t").segment_bytes == 1024**3
    with pytest.raises(InvalidPartitionsError):
        mgr.create_partitions("t", 1)


def test_alter_config_and_create_partitions_and_delete(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("t", 1, {"retention.ms": "1000"})
    mgr.alter_topic_config("t", {"retention.ms": None, "cleanup.policy": "compact"})
    assert mgr.get_log("t", 0).config.compact and mgr.topic_config("t").retention_ms == 7 * 24 * 3600 * 1000
    mgr.create_partitions("t", 3)
    mgr.get_log("t", 2).append(batch(b"v", key=b"k"))
    mgr.delete_topic("t")
    assert not any(p.is_dir() for p in (tmp_path / "data").iterdir())
    with pytest.raises(UnknownTopicOrPartitionError):
        mgr.get_log("t", 0)


def test_log_start_offset_checkpoint_is_sparse(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """LogManagerTest.testCheckpointLogStartOffsetForNormalTopic: an entry only while the log start
    offset is above the first segment's base; DeleteRecords writes it at once (Ebb)."""
    one = len(batch(b"x"))
    mgr = manager()
    mgr.create_topic("t", 2, {"segment.bytes": str(one * 5)})
    lg = mgr.get_log("t", 0)
    for _ in range(12):
        lg.append(batch(b"x"))
    path = tmp_path / "data" / "log-start-offset-checkpoint"
    mgr.delete_records({("t", 0): 7})
    assert read_offsets(path) == {("t", 0): 7}  # written by DeleteRecords itself
    mgr.run_retention()
    assert read_offsets(path) == {("t", 0): 7}  # segment [5, 10) still holds offsets 5 and 6
    mgr.delete_records({("t", 0): 10})
    mgr.run_retention()
    assert read_offsets(path) == {}  # first segment now starts at the log start offset


def test_log_start_offset_survives_restart_and_crash(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("t", 1, {})
    lg = mgr.get_log("t", 0)
    for _ in range(10):
        lg.append(batch(b"x"))
    mgr.delete_records({("t", 0): 4})
    mgr.abandon()  # kill -9: no close, no checkpoint
    again = manager()
    lg = again.get_log("t", 0)
    assert (lg.log_start_offset, lg.log_end_offset) == (4, 10)
    assert [o for o, _k, _v in read_all(lg)] == list(range(4, 10))


def test_log_starts_moved_in_one_request_are_checkpointed_once_and_survive_a_crash(  # type: ignore[no-untyped-def]
    manager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DeleteRecords request over many partitions writes log-start-offset-checkpoint once, before it
    returns, with every move; a partition's error is its own result; a crash after that keeps them all."""
    mgr = manager()
    mgr.create_topic("t", 3, {})
    mgr.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    for p in range(3):
        for _ in range(10):
            mgr.get_log("t", p).append(batch(b"x"))
    path = tmp_path / "data" / "log-start-offset-checkpoint"
    writes: list[dict[tuple[str, int], int]] = []
    write = mgr._write_log_start_offsets
    monkeypatch.setattr(mgr, "_write_log_start_offsets", lambda: (write(), writes.append(read_offsets(path))))
    results = mgr.delete_records({("t", 0): 2, ("t", 1): 3, ("t", 2): -1, ("compacted", 0): 1})
    assert {tp: r.low_watermark for tp, r in results.items() if isinstance(r, RecordsDeleted)} == {
        ("t", 0): 2,
        ("t", 1): 3,
        ("t", 2): 10,  # -1: the high watermark
    }
    assert isinstance(results[("compacted", 0)], PolicyViolationError)
    assert writes == [{("t", 0): 2, ("t", 1): 3, ("t", 2): 10}]  # once, with every move
    mgr.delete_records({("t", 0): 1})  # nothing moves: nothing written
    assert len(writes) == 1
    mgr.abandon()  # kill -9
    again = manager()
    assert [again.get_log("t", p).log_start_offset for p in range(3)] == [2, 3, 10]


def test_clean_shutdown_marker(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    marker = tmp_path / "data" / ".kafka_cleanshutdown"
    assert not marker.exists()
    mgr.create_topic("t", 1, {})
    mgr.close()
    assert marker.exists()
    manager()
    assert not marker.exists()  # removed at startup so that a later crash is detected
    cps = {p.name for p in (tmp_path / "data").iterdir()}
    assert {
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    } <= cps


def test_retention_pass_and_file_delete_delay(manager, clock: Clock, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one = len(batch(b"x"))
    mgr = manager(log_segment_delete_delay_ms=60_000)
    mgr.create_topic("t", 1, {"segment.bytes": str(one * 5), "retention.ms": "1000"})
    lg = mgr.get_log("t", 0)
    for _ in range(10):
        lg.append(batch(b"x", ts=clock.now - 5000))
    report = mgr.run_retention()
    assert report.segments_deleted == 2 and report.bytes_deleted == one * 10
    deleted = [p for p in (tmp_path / "data" / "t-0").iterdir() if p.name.endswith(".deleted")]
    assert len(deleted) == 6 and report.files_removed == 0
    clock.advance(60_000)
    assert mgr.run_retention().files_removed == 6
    assert not any(p.name.endswith(".deleted") for p in (tmp_path / "data" / "t-0").iterdir())


def test_stray_partition_directories(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A directory no topic owns (a crash inside delete_topic) is left alone at startup, and removed
    before a new topic of that name is created, so its old records never reappear."""
    stray = tmp_path / "data" / "stray-0"
    stray.mkdir(parents=True)
    (stray / "00000000000000000000.log").write_bytes(batch(b"old record"))
    mgr = manager()
    assert mgr.topics() == {} and stray.exists()
    mgr.create_topic("stray", 1, {})
    lg = mgr.get_log("stray", 0)
    assert lg.log_end_offset == 0 and read_all(lg) == []


def test_idempotent_producer_state_survives_restart(manager) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.errors import OutOfOrderSequenceError
    from ebb_broker.log.records import NewRecord, build_batch

    def produce(seq: int) -> bytes:
        return build_batch(
            [NewRecord(b"k", b"v")] * 3, producer_id=11, producer_epoch=0, base_sequence=seq, timestamp_ms=T0
        )

    mgr = manager()
    mgr.create_topic("t", 1, {})
    first = mgr.get_log("t", 0).append(produce(0))
    mgr.abandon()
    lg = manager().get_log("t", 0)
    assert lg.append(produce(0)) == first  # the retry after a broker crash is not written twice
    with pytest.raises(OutOfOrderSequenceError):
        lg.append(produce(9))
    assert lg.append(produce(3)).base_offset == 3


def test_corrupt_checkpoints(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A corrupt recovery-point checkpoint only costs a full recovery; a corrupt log-start checkpoint stops
    the start instead of resurrecting deleted records."""
    from ebb_broker.log.errors import CorruptCheckpointError

    mgr = manager()
    mgr.create_topic("t", 1, {})
    lg = mgr.get_log("t", 0)
    for _ in range(5):
        lg.append(batch(b"x"))
    mgr.delete_records({("t", 0): 3})
    mgr.abandon()
    data = tmp_path / "data"
    (data / "recovery-point-offset-checkpoint").write_text("0\n7\nt 0 5\n")
    second = manager()
    lg = second.get_log("t", 0)
    assert (lg.log_start_offset, lg.log_end_offset) == (3, 5)
    second.close()
    (data / "log-start-offset-checkpoint").write_text("0\n1\nt 0\n")
    with pytest.raises(CorruptCheckpointError, match="header says 1 entries, found 2 fields"):
        manager()


def test_partition_limits_refuse_before_anything_is_written(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager(max_partitions=5)
    mgr.create_topic("a", 3, {})
    before = (tmp_path / "data" / "ebb-topics.json").read_text()
    with pytest.raises(PartitionLimitError, match=r"max\.partitions"):
        mgr.create_topic("b", 3, {})
    with pytest.raises(PartitionLimitError, match=r"max\.partitions"):
        mgr.create_partitions("a", 6)
    assert (tmp_path / "data" / "ebb-topics.json").read_text() == before
    assert not (tmp_path / "data" / "b-0").exists()
    assert not (tmp_path / "data" / "a-3").exists()
    mgr.create_partitions("a", 5)
    assert mgr.partition_count() == 5


def test_a_stored_override_refused_today_does_not_stop_a_restart(manager, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("t", 1, {"retention.ms": "60000", "segment.ms": "1000"})
    mgr.close()
    path = tmp_path / "data" / "ebb-topics.json"
    doc = json.loads(path.read_text())
    doc["topics"]["t"]["config"]["retention.ms"] = "99999999999999999999999"  # what an older version took
    path.write_text(json.dumps(doc))
    again = manager()
    assert again.topics()["t"].overrides == {"segment.ms": "1000"}
    assert again.topic_config("t").retention_ms == 7 * 24 * 3_600_000


def test_flush_ms_fsyncs_logs_left_unflushed_that_long(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """flush.ms (topic) / log.flush.interval.ms (broker), checked by flush_dirty_logs as Kafka's log
    flusher does: a log is fsynced once flush.ms passed since its last flush, and only if it has
    unflushed records; the recovery point (what a restart need not recover) moves to its end."""
    mgr = manager(**{"log.flush.interval.ms": "60000"})
    mgr.create_topic("often", 1, {"flush.ms": "1000"})
    mgr.create_topic("broker-default", 1, {})
    mgr.create_topic("never", 1, {"flush.ms": str(2**63 - 1)})
    logs = {t: mgr.get_log(t, 0) for t in ("often", "broker-default", "never")}
    for lg in logs.values():
        lg.append(batch(b"x", ts=clock.now))
    assert mgr.flush_dirty_logs() == 0  # nothing is due yet
    clock.advance(1000)
    assert mgr.flush_dirty_logs() == 1
    assert {t: lg.recovery_point for t, lg in logs.items()} == {"often": 1, "broker-default": 0, "never": 0}
    clock.advance(1000)
    assert mgr.flush_dirty_logs() == 0  # flushed and nothing appended since
    clock.advance(60_000)
    assert mgr.flush_dirty_logs() == 1  # the broker default caught up with its log
    assert logs["broker-default"].recovery_point == 1 and logs["never"].recovery_point == 0


def test_a_batch_is_checked_as_a_whole_then_written_once(manager, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One CreateTopics or Metadata request is one batch: each topic checked on its own, the partitions
    of the rest against the budget together (all or none), and ebb-topics.json written once: 5,000 names
    in one Metadata request once rewrote it 5,000 times."""
    from ebb_broker.log import log_manager as lm

    mgr = manager(max_partitions=60)
    mgr.create_topic("a.b", 1, {})
    topics_file = tmp_path / "data" / "ebb-topics.json"
    writes: list[Path] = []
    real_write = atomic_write
    monkeypatch.setattr(lm, "atomic_write", lambda p, d: (writes.append(p), real_write(p, d)))
    batch = [lm.NewTopic(f"t{i}", 1) for i in range(50)]
    batch += [lm.NewTopic("a_b", 1), lm.NewTopic("c.d", 1), lm.NewTopic("c_d", 1), lm.NewTopic("bad\n", 1)]
    results = mgr.create_topics(batch)
    assert writes.count(topics_file) == 1
    assert all(results[f"t{i}"].partitions == 1 for i in range(50))
    assert str(results["a_b"]) == "Topic 'a_b' collides with existing topic: a.b"
    assert str(results["c_d"]) == "Topic 'c_d' collides with existing topic: c.d"  # within the batch too
    assert isinstance(results["bad\n"], InvalidTopicError)
    assert len(mgr.topics()) == 52
    # 9 partitions left: a batch asking for 10 is refused whole, a valid and an invalid one alike
    writes.clear()
    over = mgr.create_topics([lm.NewTopic("x", 5), lm.NewTopic("y", 5), lm.NewTopic("z", 0)])
    assert isinstance(over["x"], PartitionLimitError) and isinstance(over["y"], PartitionLimitError)
    assert isinstance(over["z"], InvalidPartitionsError)
    assert writes == [] and len(mgr.topics()) == 52 and not (tmp_path / "data" / "x-0").exists()


def test_a_batch_appears_once_open_and_survives_changes_made_meanwhile(  # type: ignore[no-untyped-def]
    manager, tmp_path: Path, monkeypatch
) -> None:
    """The partitions of a batch are opened without the manager's lock (the event loop reads topics() and
    changes configs meanwhile): the batch is listed only once open, and a topics file written meanwhile
    keeps it, so an acknowledged creation survives a crash."""
    import threading

    from ebb_broker.log import log_manager as lm

    mgr = manager()
    mgr.create_topic("old", 1, {})
    opening, release = threading.Event(), threading.Event()
    real_open = lm.LogManager._open_log

    def slow_open(self, topic, *args):  # type: ignore[no-untyped-def]
        if topic == "new":
            opening.set()
            assert release.wait(10)
        return real_open(self, topic, *args)

    monkeypatch.setattr(lm.LogManager, "_open_log", slow_open)
    worker = threading.Thread(target=mgr.create_topics, args=([lm.NewTopic("new", 2)],))
    worker.start()
    try:
        assert opening.wait(10)
        assert "new" not in mgr.topics()  # not listed while its partitions open
        mgr.alter_topic_config("old", {"retention.ms": "1000"})  # rewrites ebb-topics.json meanwhile
        doc = json.loads((tmp_path / "data" / "ebb-topics.json").read_text())
        assert doc["topics"]["new"]["partitions"] == 2
        assert doc["topics"]["old"]["config"] == {"retention.ms": "1000"}
    finally:
        release.set()
        worker.join(10)
    assert mgr.topics()["new"].partitions == 2
    mgr.get_log("new", 1).append(batch(b"x"))
    mgr.abandon()
    again = manager()
    assert again.get_log("new", 1).log_end_offset == 1 and again.topic_config("old").retention_ms == 1000


def test_an_illegal_name_on_disk_is_reported_and_skipped(manager, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """What an earlier version left after CreateTopics "evil\\n", a produce and DeleteRecords: the name in
    ebb-topics.json, its directory, and its log-start entry split over two lines. The broker starts, says
    which name it skipped, and the other topics keep their data and log start offsets."""
    mgr = manager()
    mgr.create_topic("ok", 1, {})
    for _ in range(3):
        mgr.get_log("ok", 0).append(batch(b"x"))
    mgr.delete_records({("ok", 0): 2})
    mgr.close()
    data = tmp_path / "data"
    doc = json.loads((data / "ebb-topics.json").read_text())
    doc["topics"]["evil\n"] = {**doc["topics"]["ok"], "id": "6f1c43a6-7d8c-4bd0-9a6c-2b0f0d6c1e11"}
    (data / "ebb-topics.json").write_text(json.dumps(doc))
    (data / "evil\n-0").mkdir()
    (data / "log-start-offset-checkpoint").write_text("0\n2\nevil\n 0 1\nok 0 2\n")
    again = manager()
    assert set(again.topics()) == {"ok"}
    lg = again.get_log("ok", 0)
    assert (lg.log_start_offset, lg.log_end_offset) == (2, 3)
    assert "skipping topic 'evil\\n'" in caplog.text
    assert (data / "evil\n-0").is_dir()
    again.close()
    assert read_offsets(data / "log-start-offset-checkpoint") == {("ok", 0): 2}
