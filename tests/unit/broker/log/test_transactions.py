"""Transactions in the log engine (KIP-98): open transactions, markers, the last stable offset, the
aborted transaction index, recovery and compaction (Kafka's ProducerStateManagerTest, UnifiedLogTest
and LogCleanerTest transaction cases, restated).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log import files
from ebb_broker.log.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    TransactionCoordinatorFencedError,
)
from ebb_broker.log.log_manager import LogManager
from ebb_broker.log.records import Record, decode_records, encode_batch, iter_headers
from ebb_broker.log.transaction_index import AbortedTxn
from tests.record_batches import raw_batch, record
from tests.unit.broker.log.log_helpers import T0, Clock, batch, read_all


def txn_batch(pid: int, seq: int, *values: bytes, key: bytes = b"k", epoch: int = 0) -> bytes:
    """A transactional producer's batch (as a client builds it: offsets from 0)."""
    records = [Record(i, T0, key, v) for i, v in enumerate(values)]
    return encode_batch(
        records,
        base_offset=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def test_the_last_stable_offset_follows_the_oldest_open_transaction(make_log) -> None:  # type: ignore[no-untyped-def]
    """testLastStableOffset...: LSO = first offset of the oldest open transaction, else the HW."""
    lg = make_log()
    lg.append(batch(b"plain"))  # 0
    lg.append(txn_batch(1, 0, b"a1", b"a2"))  # 1-2: producer 1 opens at 1
    lg.append(txn_batch(2, 0, b"b1"))  # 3: producer 2 opens at 3
    lg.append(txn_batch(1, 2, b"a3"))  # 4: still producer 1's transaction
    assert lg.last_stable_offset == 1 and lg.high_watermark == 5
    assert lg.ongoing_transactions() == {1: 1, 2: 3}
    done = lg.append_marker(1, 0, commit=True, coordinator_epoch=0)  # 5
    assert (done.first_offset, done.last_offset, done.aborted) == (1, 5, False)
    assert lg.last_stable_offset == 3
    lg.append_marker(2, 0, commit=False, coordinator_epoch=0)  # 6
    assert lg.last_stable_offset == lg.high_watermark == 7
    assert lg.collect_aborted_transactions(0, 7) == [AbortedTxn(2, 3, 6, 7)]
    assert lg.collect_aborted_transactions(7, 7) == []
    assert [h.is_control for _p, h in iter_headers(lg.read(0, 1 << 20).to_bytes())][-2:] == [True, True]


def test_a_marker_without_data_is_an_empty_transaction(make_log) -> None:  # type: ignore[no-untyped-def]
    """A partition added to a transaction but never written gets its marker all the same."""
    lg = make_log()
    done = lg.append_marker(9, 0, commit=False, coordinator_epoch=3)
    assert (done.first_offset, done.last_offset, done.aborted) == (0, 0, True)
    assert lg.collect_aborted_transactions(0, 1) == [AbortedTxn(9, 0, 0, 1)]


def test_markers_fence_by_epoch(make_log) -> None:  # type: ignore[no-untyped-def]
    """A marker older than the producer's epoch is refused; a bumped one (the coordinator fenced the
    producer) moves the epoch on, so the producer's next batch starts again at sequence 0."""
    lg = make_log()
    lg.append(txn_batch(1, 0, b"x", epoch=3))
    with pytest.raises(InvalidProducerEpochError):
        lg.append_marker(1, 2, commit=False, coordinator_epoch=0)
    lg.append_marker(1, 4, commit=False, coordinator_epoch=0)
    with pytest.raises(InvalidProducerEpochError):
        lg.append(txn_batch(1, 1, b"zombie", epoch=3))
    lg.append(txn_batch(1, 0, b"fresh", epoch=4))
    assert lg.last_stable_offset == 2


def test_markers_fence_an_older_coordinator_epoch(make_log) -> None:  # type: ignore[no-untyped-def]
    """checkCoordinatorEpoch: a marker from an older coordinator epoch than the producer's last marker is
    refused and writes nothing (WriteTxnMarkers answers TRANSACTION_COORDINATOR_FENCED); the same epoch
    or a newer one is taken."""
    lg = make_log()
    lg.append(txn_batch(1, 0, b"x"))  # 0
    lg.append_marker(1, 0, commit=False, coordinator_epoch=5)  # 1
    lg.append(txn_batch(1, 1, b"y"))  # 2
    with pytest.raises(TransactionCoordinatorFencedError):
        lg.append_marker(1, 0, commit=False, coordinator_epoch=4)
    assert (lg.log_end_offset, lg.last_stable_offset) == (3, 2)
    lg.append_marker(1, 0, commit=True, coordinator_epoch=5)  # 3
    assert lg.last_stable_offset == 4


def _reopen(manager, mgr: LogManager) -> LogManager:  # type: ignore[no-untyped-def]
    mgr.close()
    return manager()


@pytest.mark.parametrize("clean_shutdown", [True, False], ids=["clean", "crash"])
def test_open_transactions_and_aborts_survive_a_restart(manager, clean_shutdown: bool) -> None:  # type: ignore[no-untyped-def]
    """Producer state is rebuilt from the batches, the .txnindex read back (after a crash it is rebuilt
    from the ABORT markers, Kafka's LogSegment.recover)."""
    mgr = manager()
    mgr.create_topic("t", 1, {})
    lg = mgr.get_log("t", 0)
    lg.append(txn_batch(1, 0, b"aborted"))  # 0
    lg.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 1
    lg.append(txn_batch(2, 0, b"open"))  # 2
    directory = lg.directory
    txn_file = files.segment_file(directory, 0, files.TXN_INDEX_SUFFIX)
    assert txn_file.exists()
    if clean_shutdown:
        mgr = _reopen(manager, mgr)
    else:
        mgr.close()
        (directory.parent / files.CLEAN_SHUTDOWN).unlink()
        txn_file.unlink()  # recovery must rebuild it
        mgr = manager()
    lg = mgr.get_log("t", 0)
    assert lg.last_stable_offset == 2 and lg.ongoing_transactions() == {2: 2}
    assert [
        (t.producer_id, t.first_offset, t.last_offset) for t in lg.collect_aborted_transactions(0, 3)
    ] == [(1, 0, 1)]


def test_the_cleaner_drops_aborted_records_and_stops_at_the_last_stable_offset(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """LogCleanerTest testAbortedTransactionsRemoved / testCleanWithTransactionsSpanningSegments: an
    aborted value never supersedes a committed one, and an open transaction is left for later."""
    mgr = manager()
    one = len(txn_batch(1, 0, b"v1"))
    mgr.create_topic(
        "t",
        1,
        {"cleanup.policy": "compact", "segment.bytes": str(one * 3), "min.cleanable.dirty.ratio": "0.01"},
    )
    lg = mgr.get_log("t", 0)
    lg.append(txn_batch(1, 0, b"committed"))  # 0
    lg.append_marker(1, 0, commit=True, coordinator_epoch=0)  # 1
    lg.append(txn_batch(1, 1, b"aborted"))  # 2
    lg.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 3
    lg.append(batch(b"x", key=b"other", ts=clock.now))  # 4
    lg.append(txn_batch(2, 0, b"open", key=b"k2"))  # 5: stays open
    lg.append(batch(b"y", key=b"other", ts=clock.now))  # 6
    lg.append(batch(b"z", key=b"other", ts=clock.now))  # 7
    assert lg.last_stable_offset == 5
    report = mgr.run_cleaner()
    assert report is not None and report.end_offset <= 5, "cleaned past the last stable offset"
    visible = {o: (k, v) for o, k, v in read_all(lg)}
    assert visible[0] == (b"k", b"committed") and 2 not in visible, visible
    assert 5 in visible, "the open transaction's record was touched"
    assert lg.collect_aborted_transactions(0, lg.high_watermark) == [AbortedTxn(1, 2, 3, 4)]
    markers = [h.base_offset for _p, h in iter_headers(lg.read(0, 1 << 20).to_bytes()) if h.is_control]
    assert markers == [1, 3]


def test_idle_producers_expire_but_not_with_an_open_transaction(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """producer.id.expiration.ms: idle producers are forgotten, except one in the middle of a transaction."""
    lg = make_log()
    lg.append(batch(b"a", producer_id=1, producer_epoch=0, base_sequence=0))
    lg.append(txn_batch(2, 0, b"b"))
    clock.advance(86_400_001)
    assert lg.remove_expired_producers(clock.now, 86_400_000) == 1
    assert lg.producer_state(1) is None and lg.producer_state(2) is not None


def test_txn_index_file_is_kafkas_format(tmp_path: Path) -> None:
    """34-byte AbortedTxn entries: version, producerId, firstOffset, lastOffset, lastStableOffset."""
    from ebb_broker.log.transaction_index import TransactionIndex

    idx = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    idx.append(AbortedTxn(7, 10, 20, 21))
    raw = idx.path.read_bytes()
    assert raw == (0).to_bytes(2, "big") + b"".join(v.to_bytes(8, "big") for v in (7, 10, 20, 21))
    assert TransactionIndex(idx.path).entries == [AbortedTxn(7, 10, 20, 21)]


def test_the_last_stable_offset_never_falls_below_the_log_start_offset(make_log) -> None:  # type: ignore[no-untyped-def]
    """DeleteRecords past an open transaction's first records: read_committed starts at the new log
    start, not at offsets that no longer exist."""
    lg = make_log()
    lg.append(batch(b"a"))  # 0
    lg.append(txn_batch(1, 0, b"t1", b"t2"))  # 1-2, open
    lg.append(batch(b"b"))  # 3
    assert lg.last_stable_offset == 1
    lg.delete_records(2)
    assert lg.last_stable_offset == 2


def test_transactional_batches_and_markers_go_through_the_validator(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """Kafka's LogValidator: a transactional batch is checked record by record and recompressed like any
    other (compression.type), a marker (origin COORDINATOR) is stamped but keeps its codec ("do not
    compress control records"), and a client may not write one."""
    lg = make_log(compression_type="gzip", message_timestamp_type="LogAppendTime")
    lg.append(txn_batch(1, 0, b"a", b"b"))  # 0-1
    lg.append_marker(1, 0, commit=True, coordinator_epoch=5)  # 2
    data = lg.read(0, 1 << 20).to_bytes()
    stored = [(h, data[p : p + h.size]) for p, h in iter_headers(data)]
    assert [(h.is_transactional, h.is_control, h.compression) for h, _r in stored] == [
        (True, False, 1),
        (True, True, 0),
    ]
    assert [h.max_timestamp for h, _r in stored] == [clock.now, clock.now]  # LogAppendTime for both
    assert [(r.key, r.value) for r in decode_records(stored[1][1])] == [
        (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")  # COMMIT, coordinator epoch 5
    ]
    lying = raw_batch(record(0), 2, attributes=0x10, producer_id=1, base_sequence=2)  # count 2, one record
    with pytest.raises(InvalidRecordError):
        lg.append(lying)
    control = encode_batch(
        [Record(0, T0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
        base_offset=0,
        producer_id=1,
        is_transactional=True,
        is_control=True,
    )
    with pytest.raises(InvalidRecordError, match="control records"):
        lg.append(control)
    assert lg.log_end_offset == lg.last_stable_offset == 3
