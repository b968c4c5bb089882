"""kill -9 during sustained acks=all produce loses no acknowledged record (20 crashes in a row)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker

TOPIC = "crash"
REPETITIONS = 20


def _produce_until_killed(broker: EbbBroker, start: int, run_for: float) -> tuple[list[int], int]:
    """Produce increasing sequence numbers; kill -9 the broker mid-stream; return the acked ones."""
    acked: list[int] = []
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "linger.ms": 1,
            "message.timeout.ms": 3000,
            "retries": 0,
            "socket.timeout.ms": 3000,
        }
    )

    def done(err: object, msg: object) -> None:
        if err is None:
            acked.append(int(msg.value()))  # type: ignore[attr-defined]

    killer = threading.Timer(run_for, broker.kill)
    killer.start()
    seq = start
    end = time.monotonic() + run_for
    while time.monotonic() < end and broker.alive():
        try:
            p.produce(TOPIC, str(seq).encode(), partition=0, on_delivery=done)
            seq += 1
        except BufferError:
            pass
        # About 10k records/s: sustained, while keeping 20 crash-and-read rounds quick.
        p.poll(0)
        if seq % 100 == 0:
            time.sleep(0.01)
    killer.join()
    # Whatever was not acknowledged when the broker died never will be: report it failed at once.
    p.purge()
    p.flush(1)
    return acked, seq


def _read_all(broker: EbbBroker) -> list[int]:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "crash-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        c.assign([TopicPartition(TOPIC, 0, 0)])
        out: list[int] = []

        def read_to_high_watermark() -> bool:
            msg = c.poll(0.5)
            value = msg.value() if msg is not None and not msg.error() else None
            if value is not None:
                out.append(int(value))
            return len(out) >= high

        until(f"{high} records read", read_to_high_watermark, 30, interval=0)
        return out
    finally:
        close_within(c)


def test_kill_9_loses_no_acknowledged_record(broker_factory: Callable[..., EbbBroker]) -> None:
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    all_acked: list[int] = []
    seq = 0
    for rep in range(REPETITIONS):
        acked, seq = _produce_until_killed(broker, seq, run_for=0.3 + 0.05 * (rep % 5))
        all_acked += acked
        broker.restart()
        stored = _read_all(broker)
        assert len(stored) == len(set(stored)), f"duplicates after crash {rep}"
        assert stored == sorted(stored), f"out of order after crash {rep}"
        missing = set(all_acked) - set(stored)
        assert not missing, (
            f"crash {rep} lost {len(missing)} acknowledged records, e.g. {sorted(missing)[:5]}"
        )
    assert len(all_acked) > REPETITIONS, "the producer barely produced; the test proves nothing"
