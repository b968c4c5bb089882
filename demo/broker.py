"""`make demo`: ebb-broker with real clients, two consumer groups, and a consumer-aware DeleteRecords.

Every step says what it does. Nothing is simulated: a real ebb-broker process, real
confluent-kafka producers and consumers, Kafka's DeleteRecords API, and the files on disk.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from harness.ebb_broker import EbbBroker

TOPIC = "orders"
PARTITIONS = 2
RECORDS_PER_PRODUCER = 15_000


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def disk_bytes(data_dir: Path) -> dict[int, int]:
    return {
        p: sum(f.stat().st_size for f in (data_dir / f"{TOPIC}-{p}").glob("*.log")) for p in range(PARTITIONS)
    }


def segments(data_dir: Path) -> dict[int, int]:
    return {p: len(list((data_dir / f"{TOPIC}-{p}").glob("*.log"))) for p in range(PARTITIONS)}


def watermarks(admin: AdminClient) -> dict[int, tuple[int, int]]:
    out = {}
    for p in range(PARTITIONS):
        tp = TopicPartition(TOPIC, p)
        low = next(iter(admin.list_offsets({tp: OffsetSpec.earliest()}).values())).result(10).offset
        high = next(iter(admin.list_offsets({tp: OffsetSpec.latest()}).values())).result(10).offset
        out[p] = (low, high)
    return out


def produce(bootstrap: str, name: str) -> None:
    # Batches stay well under segment.bytes: Kafka (and Ebb) refuse a batch larger than a segment.
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 16384,
            "client.id": name,
        }
    )
    failed: list[str] = []

    def done(err: object, msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    for i in range(RECORDS_PER_PRODUCER):
        p.produce(
            TOPIC, key=f"{name}-{i % 100}".encode(), value=f"{name} order {i} ".encode() * 4, on_delivery=done
        )
        p.poll(0)
    p.flush(60)
    if failed:
        raise SystemExit(f"{name}: {len(failed)} records were not acknowledged, e.g. {failed[0]}")


def consume(bootstrap: str, group: str, fraction: float) -> dict[int, int]:
    """Read `fraction` of every partition as group `group` and commit that position."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    targets = {p: int(high * fraction) for p, (_, high) in watermarks(admin).items()}
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    position = dict.fromkeys(targets, 0)
    deadline = time.monotonic() + 60
    while any(position[p] < targets[p] for p in targets) and time.monotonic() < deadline:
        for msg in c.consume(1000, 0.5):
            p, offset = msg.partition(), msg.offset()
            if not msg.error() and p is not None and offset is not None and offset < targets[p]:
                position[p] = offset + 1
    c.commit(offsets=[TopicPartition(TOPIC, p, off) for p, off in position.items()], asynchronous=False)
    c.close()
    return position


def committed(admin: AdminClient, group: str) -> dict[int, int]:
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    res = admin.list_consumer_group_offsets([req])[group].result(10)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ebb-demo-") as tmp:
        data = Path(tmp) / "data"
        say("Starting ebb-broker (a Kafka-protocol broker in Python) with a 1 s retention check")
        broker = EbbBroker(
            data,
            configs={"log.retention.check.interval.ms": "1000", "offsets.topic.num.partitions": "4"},
            log_dir=Path(tmp),
        )
        broker.start()
        print(f"    listening on {broker.bootstrap}, data in {data}")
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            say(
                f"Creating topic {TOPIC!r}: {PARTITIONS} partitions, 64 KiB segments, "
                "deleted files go at once"
            )
            admin.create_topics(
                [
                    NewTopic(
                        TOPIC,
                        PARTITIONS,
                        1,
                        config={"segment.bytes": str(64 * 1024), "file.delete.delay.ms": "0"},
                    )
                ]
            )[TOPIC].result(30)

            say(f"Two producers write {RECORDS_PER_PRODUCER} records each, concurrently (acks=all)")
            threads = [
                threading.Thread(target=produce, args=(broker.bootstrap, n)) for n in ("web", "mobile")
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for p, (low, high) in watermarks(admin).items():
                print(f"    partition {p}: offsets {low}..{high}")
            total = sum(high for _, high in watermarks(admin).values())
            print(f"    {total} records acknowledged and stored")

            say("Group 'billing' reads everything; group 'analytics' reads only the first 40%; both commit")
            for group, fraction in (("billing", 1.0), ("analytics", 0.4)):
                consume(broker.bootstrap, group, fraction)
                print(f"    {group:9} committed {committed(admin, group)}")

            before = disk_bytes(data)
            say("Bytes on disk before deleting anything (the .log segment files)")
            for p in range(PARTITIONS):
                print(f"    partition {p}: {before[p]:>9,} bytes in {segments(data)[p]} segments")

            say("Consumer-aware cut: delete only what EVERY group has committed past (the minimum offset)")
            billing, analytics = committed(admin, "billing"), committed(admin, "analytics")
            cut = {p: min(billing[p], analytics[p]) for p in range(PARTITIONS)}
            print(f"    safe delete-before offsets: {cut}")
            futs = admin.delete_records([TopicPartition(TOPIC, p, off) for p, off in cut.items()])
            for tp, fut in futs.items():
                print(
                    f"    DeleteRecords partition {tp.partition}: "
                    f"new low watermark {fut.result(30).low_watermark}"
                )

            say("The next retention pass removes the segments wholly below the low watermark")
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and disk_bytes(data) == before:
                time.sleep(0.5)
            after = disk_bytes(data)
            for p in range(PARTITIONS):
                print(
                    f"    partition {p}: {before[p]:>9,} -> {after[p]:>9,} bytes on disk "
                    f"({segments(data)[p]} segments left)"
                )
            for p, (low, high) in watermarks(admin).items():
                print(f"    partition {p}: earliest offset is now {low} (latest {high})")

            say("'analytics' resumes exactly where it stopped: nothing it had not read was deleted")
            c = Consumer(
                {"bootstrap.servers": broker.bootstrap, "group.id": "analytics", "enable.auto.commit": False}
            )
            c.subscribe([TOPIC])
            msg = None
            end = time.monotonic() + 30
            while time.monotonic() < end and (msg is None or msg.error()):
                msg = c.poll(0.5)
            c.close()
            if msg is not None and not msg.error():
                print(f"    first record for analytics: partition {msg.partition()} offset {msg.offset()}")
        finally:
            say("Stopping ebb-broker with SIGTERM (flush, checkpoints, clean-shutdown marker)")
            code = broker.stop()
            print(
                f"    exit code {code}; "
                f"clean-shutdown marker present: {(data / '.kafka_cleanshutdown').exists()}"
            )


if __name__ == "__main__":
    main()
