"""Maintenance in a worker thread while the event loop's thread appends and reads (LogConcurrencyTest)."""

from __future__ import annotations

import threading

from tests.unit.broker.log.log_helpers import Clock, batch, read_all


def test_append_and_read_while_retention_and_cleaner_run(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager(log_segment_delete_delay_ms=0)
    one = len(batch(b"v0", key=b"k0"))
    mgr.create_topic(
        "c",
        1,
        {
            "cleanup.policy": "compact,delete",
            "segment.bytes": str(one * 20),
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    lg = mgr.get_log("c", 0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def maintenance() -> None:
        try:
            while not stop.is_set():
                mgr.run_cleaner()
                mgr.run_retention()
        except BaseException as exc:  # surfaced to the main thread below
            errors.append(exc)

    worker = threading.Thread(target=maintenance)
    worker.start()
    expected: dict[bytes, bytes] = {}
    try:
        for i in range(1500):
            key, value = b"k%d" % (i % 50), b"v%d" % i
            lg.append(batch(value, key=key))
            expected[key] = value
            if i % 300 == 299:
                lg.delete_records(i - 600 if i > 600 else 0)
                seen = read_all(lg)
                assert all(o >= lg.log_start_offset for o, _k, _v in seen)
    finally:
        stop.set()
        worker.join()
    assert not errors, errors
    # the newest record of every key lies above the log start offset: a consumer still sees all of them
    assert {k: v for _o, k, v in read_all(lg)} == expected
