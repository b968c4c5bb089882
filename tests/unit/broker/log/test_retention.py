"""Consumed retention (KIP-68) as a retention predicate fed by a committed-offset provider."""

from __future__ import annotations

from tests.unit.broker.log.log_helpers import Clock, batch

ONE = len(batch(b"x" * 10, key=b"k"))
HOUR = 3_600_000


class Offsets:
    """What the group coordinator will provide: group -> committed offset, or None when unknown."""

    def __init__(self, offsets: dict[str, int] | None) -> None:
        self.offsets = offsets
        self.asked: list[tuple[str, int]] = []

    def committed_offsets(self, topic: str, partition: int) -> dict[str, int] | None:
        self.asked.append((topic, partition))
        return self.offsets


def _log(make_log, clock: Clock, commitoffset_ms: int = HOUR, **kw):  # type: ignore[no-untyped-def]
    lg = make_log(
        segment_bytes=ONE * 5,
        retention_ms=kw.pop("retention_ms", 48 * HOUR),
        retention_commitoffset_ms=commitoffset_ms,
        **kw,
    )
    for _ in range(20):  # segments [0,5) [5,10) [10,15) [15,20), two hours old
        lg.append(batch(b"x" * 10, key=b"k", ts=clock.now - 2 * HOUR))
    return lg


def test_consumed_and_old_segments_are_deleted(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    provider = Offsets({"billing": 12, "audit": 17})
    result = lg.delete_old_segments(committed_offsets=provider)
    assert provider.asked == [("t", 0)]
    # min committed offset 12: [0,5) and [5,10) are wholly consumed, [10,15) is not
    assert result.by_reason == {"consumed": 2} and lg.log_start_offset == 10


def test_a_lagging_group_holds_the_data(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    assert lg.delete_old_segments(committed_offsets=Offsets({"fast": 20, "slow": 4})).segments == 0
    assert lg.delete_old_segments(committed_offsets=Offsets({"fast": 20, "slow": 5})).segments == 1


def test_unknown_offsets_skip_the_partition(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    result = lg.delete_old_segments(committed_offsets=Offsets(None))
    assert result.segments == 0 and result.consumed_skipped
    assert lg.delete_old_segments(committed_offsets=Offsets({})).segments == 0  # nobody consumed it
    assert lg.delete_old_segments(committed_offsets=None).segments == 0  # no provider: fail closed


def test_young_data_is_kept_even_when_consumed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=3 * HOUR)
    assert lg.delete_old_segments(committed_offsets=Offsets({"g": 20})).segments == 0
    clock.advance(HOUR + 1)
    result = lg.delete_old_segments(committed_offsets=Offsets({"g": 20}))
    assert result.segments == 4 and lg.log_start_offset == 20  # all consumed: roll first, keep one empty


def test_disabled_consumed_retention_never_asks(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=-1)
    provider = Offsets({"g": 20})
    assert lg.delete_old_segments(committed_offsets=provider).segments == 0
    assert provider.asked == []


def test_forced_retention_still_runs_after_consumed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=HOUR, retention_ms=HOUR)
    result = lg.delete_old_segments(committed_offsets=Offsets({"g": 7}))
    assert result.by_reason == {"consumed": 1, "retention-ms": 3}


def test_compact_only_topics_ignore_consumed_retention(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, cleanup_policy="compact")
    assert lg.delete_old_segments(committed_offsets=Offsets({"g": 20})).segments == 0


def test_log_manager_feeds_the_provider(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    provider = Offsets({"g": 5})
    mgr = manager(provider, log_retention_commitoffset_enable="true", log_retention_commitoffset_ms="1000")
    mgr.create_topic("t", 1, {"segment.bytes": str(ONE * 5)})
    lg = mgr.get_log("t", 0)
    for _ in range(10):
        lg.append(batch(b"x" * 10, key=b"k", ts=clock.now - 5000))
    report = mgr.run_retention()
    assert report.partitions[("t", 0)].by_reason == {"consumed": 1}
