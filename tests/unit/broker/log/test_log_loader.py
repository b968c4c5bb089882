"""Recovery at startup (Kafka's LogLoaderTest, restated): torn tails, garbage, bad indexes, swaps."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.local_log import SwapStage
from ebb_broker.log.log import Log
from ebb_broker.log.log_config import LogConfig
from tests.unit.broker.log.log_helpers import T0, Clock, batch, read_all

ONE = len(batch(b"v0", key=b"k0"))


def _open(
    path: Path, clock: Clock, *, clean: bool = False, recovery_point: int = 0, start: int = 0, **props: str
) -> Log:
    config = LogConfig.parse({"segment.bytes": str(ONE * 5), "index.interval.bytes": "1", **props})
    return Log.open(
        path,
        "t",
        0,
        config,
        clock=clock,
        clean_shutdown=clean,
        recovery_point=recovery_point,
        log_start_offset=start,
    )


def _fill(lg: Log, n: int) -> list[tuple[int, bytes | None, bytes | None]]:
    for i in range(n):
        lg.append(batch(b"v%d" % i, key=b"k%d" % (i % 3), ts=T0 + i))
    return read_all(lg)


def test_garbage_appended_to_log_and_index_recovers_exactly(tmp_path: Path, clock: Clock) -> None:
    """testCorruptLog: garbage at the end of the active .log and of an .index."""
    lg = _open(tmp_path / "t-0", clock)
    before = _fill(lg, 12)
    segs = lg.segments()
    lg.abandon()
    with segs[-1].log_path.open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x01\x00garbage" * 3)
    with segs[0].offset_index.path.open("ab") as f:
        f.write(b"\xde\xad\xbe\xef\x01")
    again = _open(tmp_path / "t-0", clock)
    assert read_all(again) == before
    assert again.log_end_offset == 12
    assert again.append(batch(b"next")).base_offset == 12
    for target in range(12):
        _pos, h = again.local.segments.floor(target).translate_offset(target)  # type: ignore[union-attr,misc]
        assert h.base_offset == target
    again.close()


def test_torn_write_is_truncated(tmp_path: Path, clock: Clock) -> None:
    lg = _open(tmp_path / "t-0", clock)
    before = _fill(lg, 3)
    path = lg.segments()[-1].log_path
    lg.abandon()
    with path.open("ab") as f:
        f.write(batch(b"half written", key=b"k")[:40])
    again = _open(tmp_path / "t-0", clock)
    assert read_all(again) == before and path.stat().st_size == 3 * ONE
    again.close()


def test_corrupt_segment_truncates_and_drops_later_segments(tmp_path: Path, clock: Clock) -> None:
    lg = _open(tmp_path / "t-0", clock)
    _fill(lg, 12)
    segs = lg.segments()
    lg.abandon()
    with segs[1].log_path.open("r+b") as f:  # flip a payload byte of offset 7
        f.seek(2 * ONE + 70)
        b = f.read(1)
        f.seek(2 * ONE + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    again = _open(tmp_path / "t-0", clock)
    assert again.log_end_offset == 7
    assert [s.base_offset for s in again.segments()] == [0, 5]
    again.close()


def test_clean_shutdown_skips_recovery_and_unclean_rebuilds_missing_indexes(
    tmp_path: Path, clock: Clock
) -> None:
    lg = _open(tmp_path / "t-0", clock)
    before = _fill(lg, 12)
    lg.close()
    again = _open(tmp_path / "t-0", clock, clean=True, recovery_point=12)
    assert read_all(again) == before and again.recovery_point == 12
    again.close()
    for p in (tmp_path / "t-0").glob("*.index"):
        p.unlink()
    third = _open(tmp_path / "t-0", clock, recovery_point=0)
    assert read_all(third) == before
    assert all(s.offset_index.entries > 0 for s in third.segments()[:-1])
    third.close()


def test_log_end_below_checkpointed_start_starts_empty_there(tmp_path: Path, clock: Clock) -> None:
    lg = _open(tmp_path / "t-0", clock)
    _fill(lg, 3)
    lg.close()
    again = _open(tmp_path / "t-0", clock, clean=True, start=50)
    assert (again.log_start_offset, again.log_end_offset) == (50, 50)
    assert again.append(batch(b"x")).base_offset == 50
    again.close()


class Crash(BaseException):
    """The process dies here: nothing after this point runs, files stay as they are."""


@pytest.mark.parametrize("stage", list(SwapStage))
def test_crash_at_every_swap_stage_recovers(manager, clock: Clock, tmp_path: Path, stage: SwapStage) -> None:  # type: ignore[no-untyped-def]
    """testRecoveryAfterCrash / testRecoveryAfterCrashDuringSplitPhase*: the key set survives a crash at
    any step of .cleaned -> .swap -> final, and no temporary file is left."""
    mgr = manager()
    mgr.create_topic(
        "t", 1, {"cleanup.policy": "compact", "segment.bytes": str(ONE * 4), "file.delete.delay.ms": "60000"}
    )
    lg = mgr.get_log("t", 0)
    expected: dict[bytes, bytes] = {}
    for i in range(30):
        key, value = b"k%d" % (i % 4), b"v%d" % i
        lg.append(batch(value, key=key))
        expected[key] = value
    leo = lg.log_end_offset

    def crash(at: SwapStage) -> None:
        if at == stage:
            raise Crash(at.value)

    mgr.cleaner.after_swap_stage = crash
    with pytest.raises(Crash):
        mgr.run_cleaner()
    mgr.abandon()
    again = manager()
    lg = again.get_log("t", 0)
    latest = {k: v for _o, k, v in read_all(lg)}
    assert latest == expected and lg.log_end_offset == leo
    names = [p.name for p in (tmp_path / "data" / "t-0").iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    offsets = [o for o, _k, _v in read_all(lg)]
    assert offsets == sorted(set(offsets))  # no segment was restored twice
    assert again.run_cleaner() is not None or stage == SwapStage.SWAP_RENAMED_FINAL
    assert {k: v for _o, k, v in read_all(lg)} == expected
