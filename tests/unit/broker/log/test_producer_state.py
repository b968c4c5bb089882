"""Idempotent-producer state (Kafka's ProducerStateManagerTest, the cases without transactions)."""

from __future__ import annotations

import pytest

from ebb_broker.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from ebb_broker.log.producer_state import BATCHES_TO_RETAIN, ProducerEntry, ProducerStateManager
from ebb_broker.log.records import NewRecord, build_batch, with_offset
from ebb_formats.record_batch import BatchHeader, read_header

PID = 7


def _header(seq: int, count: int = 1, *, epoch: int = 0, offset: int = 0, pid: int = PID) -> BatchHeader:
    raw = build_batch(
        [NewRecord(None, b"v")] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )
    return read_header(with_offset(raw, offset))


def _append(state: ProducerStateManager, header: BatchHeader) -> None:
    """Check then record one batch, as Log.append does for a request of one batch."""
    assert state.check(header, {}) is None
    pending: dict[int, ProducerEntry] = {}
    state.stage(header, pending, timestamp=1)
    state.commit(pending)


def test_an_unknown_producer_starts_at_any_sequence() -> None:
    """KIP-360: a producer whose state expired is accepted as it comes."""
    state = ProducerStateManager()
    _append(state, _header(42, offset=0))
    entry = state.entry(PID)
    assert entry is not None and entry.epoch == 0 and entry.batches[-1].last_seq == 42


def test_a_retried_batch_is_a_duplicate_with_its_original_offsets() -> None:
    """testDuplicateBatchSucceeds... / the last 5 batches (NUM_BATCHES_TO_RETAIN) are remembered."""
    state = ProducerStateManager()
    for i in range(BATCHES_TO_RETAIN + 1):
        _append(state, _header(i * 2, count=2, offset=100 + i * 2))
    dup = state.check(_header(10, count=2, offset=999), {})  # the newest batch, retried
    assert dup is not None and (dup.first_offset, dup.last_offset) == (110, 111)
    oldest_kept = state.check(_header(2, count=2, offset=999), {})
    assert oldest_kept is not None and oldest_kept.first_offset == 102
    with pytest.raises(OutOfOrderSequenceError):  # batch 0 fell out of the 5 remembered ones
        state.check(_header(0, count=2), {})


def test_a_gap_in_sequence_is_refused() -> None:
    state = ProducerStateManager()
    _append(state, _header(0, count=3))
    with pytest.raises(OutOfOrderSequenceError, match="sent sequence 4, expected 3"):
        state.check(_header(4), {})


def test_sequence_numbers_wrap_at_int32() -> None:
    state = ProducerStateManager()
    _append(state, _header(2**31 - 2, count=2))
    assert state.check(_header(0), {}) is None


def test_an_older_epoch_is_fenced_and_a_new_epoch_starts_at_zero() -> None:
    state = ProducerStateManager()
    _append(state, _header(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError, match="epoch 2 is fenced by epoch 3"):
        state.check(_header(1, epoch=2), {})
    with pytest.raises(OutOfOrderSequenceError, match="bumped its epoch to 4 but starts at seq 5"):
        state.check(_header(5, epoch=4), {})
    _append(state, _header(0, epoch=4))
    entry = state.entry(PID)
    assert entry is not None and entry.epoch == 4 and len(entry.batches) == 1


def test_staged_batches_are_invisible_until_committed() -> None:
    """A request of several batches is checked against its own earlier batches (pending), and nothing
    is remembered when the request fails part way."""
    state = ProducerStateManager()
    pending: dict[int, ProducerEntry] = {}
    first = _header(0, count=2, offset=0)
    state.stage(first, pending, timestamp=1)
    assert state.check(_header(2, offset=2), pending) is None  # follows the staged batch
    assert state.entry(PID) is None
    state.commit(pending)
    assert state.entry(PID) is not None


def test_non_idempotent_batches_carry_no_state() -> None:
    state = ProducerStateManager()
    plain = read_header(build_batch([NewRecord(None, b"v")]))
    assert state.check(plain, {}) is None
    state.load_batch(plain)
    assert len(state) == 0


def test_startup_replay_and_the_last_offsets_the_cleaner_must_keep() -> None:
    state = ProducerStateManager()
    state.load_batch(_header(0, count=2, offset=10))
    state.load_batch(_header(0, count=1, offset=20, pid=8))
    assert state.last_offsets() == {11, 20}
    state.clear()
    assert len(state) == 0
