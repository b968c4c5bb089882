"""Maintenance in a worker thread while the event loop's thread appends and reads (LogConcurrencyTest)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ebb_broker.config import BrokerConfig
from ebb_broker.log.log import Log
from ebb_broker.log.log_manager import LogManager
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


def test_a_checkpoint_in_a_worker_thread_never_deadlocks_close_or_delete_topic(
    tmp_path: Path, clock: Clock
) -> None:
    """The periodic checkpoint (a worker thread) and close() / delete_topic() (the loop's thread) take the
    same locks; they must take them in one order. The worker is held just after it took the checkpoint
    lock, before it lists the logs, while close() or delete_topic() starts on another thread. They once
    deadlocked (close held the logs lock and waited for the checkpoint lock, the worker the other way
    round): the broker's event loop stopped and it never exited on SIGTERM. (No fixture closes these
    managers: a deadlocked one cannot be closed, and the test must fail, not hang.)"""
    config = BrokerConfig.parse({}).log_manager_config()
    for action in ("close", "delete_topic"):
        mgr = LogManager.open(tmp_path / action, config, clock=clock)
        mgr.create_topic("t", 2, {})
        mgr.get_log("t", 0).append(batch(b"v"))
        listing = mgr.logs
        held, go = threading.Event(), threading.Event()

        def logs_held_in_the_checkpoint(
            mgr: LogManager = mgr,
            listing: Callable[[], list[Log]] = listing,
            held: threading.Event = held,
            go: threading.Event = go,
        ) -> list[Log]:
            if mgr._checkpoint_lock.locked() and not held.is_set():  # inside _write_checkpoints
                held.set()
                go.wait(10)
            return listing()

        mgr.logs = logs_held_in_the_checkpoint  # type: ignore[method-assign]
        worker = threading.Thread(target=mgr.checkpoint, daemon=True)
        worker.start()
        assert held.wait(10), "the checkpoint never reached its lock"
        other = threading.Thread(
            target=mgr.close if action == "close" else lambda mgr=mgr: mgr.delete_topic("t"), daemon=True
        )
        other.start()
        other.join(0.5)  # the time to take whatever it takes before the checkpoint lock
        go.set()
        worker.join(10)
        other.join(10)
        assert not worker.is_alive() and not other.is_alive(), f"checkpoint and {action} deadlocked"
        mgr.close()
        assert (tmp_path / action / ".kafka_cleanshutdown").exists()
