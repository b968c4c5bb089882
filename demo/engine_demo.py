"""A real demonstration of Ebb's log engine, until the broker exists (`make demo`).

Creates a topic in a temporary data directory, appends a workload, shows the segment files on disk,
deletes records (KIP-107), runs a retention pass, shows the bytes reclaimed, restarts and shows that the
log start offset survived.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ebb_broker.config import BrokerConfig
from ebb_broker.log.errors import OffsetOutOfRangeError
from ebb_broker.log.log_manager import LogManager
from ebb_broker.log.records import NewRecord, build_batch

TOPIC = "orders"
DELAY_MS = 1500


def say(msg: str) -> None:
    print(f"\n==> {msg}", flush=True)


def disk_usage(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file())


def show_partitions(mgr: LogManager) -> None:
    for lg in mgr.logs():
        files = sorted(p for p in lg.directory.iterdir())
        print(
            f"  {lg.directory.name}: log start {lg.log_start_offset}, log end {lg.log_end_offset}, "
            f"{lg.size_in_bytes():,} bytes in {len(lg.segments())} segments"
        )
        for p in files:
            print(f"      {p.name:<40} {p.stat().st_size:>9,} B")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ebb-demo-") as tmp:
        data_dir = Path(tmp) / "data"
        config = BrokerConfig.parse({"log.segment.delete.delay.ms": str(DELAY_MS)}).log_manager_config()
        say(f"opening a LogManager on {data_dir} (Kafka's on-disk layout)")
        mgr = LogManager.open(data_dir, config)
        say(f"creating topic {TOPIC!r}: 2 partitions, segment.bytes=64 KiB")
        mgr.create_topic(TOPIC, 2, {"segment.bytes": str(64 * 1024)})

        say("appending 2,000 records of 200 B to each partition, 50 records per batch")
        for p in range(2):
            lg = mgr.get_log(TOPIC, p)
            for b in range(40):
                lg.append(build_batch([NewRecord(b"order-%d" % (b * 50 + i), b"x" * 200) for i in range(50)]))
        show_partitions(mgr)
        before = disk_usage(data_dir)
        print(f"  data directory: {before:,} bytes")

        say("DeleteRecords (KIP-107): partition 0 before offset 1200, partition 1 up to the high watermark")
        for (_topic, p), result in mgr.delete_records({(TOPIC, 0): 1200, (TOPIC, 1): -1}).items():
            print(f"  {TOPIC}-{p}: low watermark is now {getattr(result, 'low_watermark', result)}")
        print("  log-start-offset-checkpoint, written before DeleteRecords returned:")
        checkpoint = (data_dir / "log-start-offset-checkpoint").read_text()
        print("    " + checkpoint.replace("\n", "\n    ").rstrip())

        say("retention pass: segments wholly below the log start offset go (renamed .deleted first)")
        report = mgr.run_retention()
        for (topic, p), r in sorted(report.partitions.items()):
            print(f"  {topic}-{p}: {r.segments} segments, {r.bytes:,} bytes ({r.by_reason})")
        pending = mgr.reaper.pending()
        print(f"  {len(pending)} files renamed *.deleted, removed after file.delete.delay.ms={DELAY_MS}")
        time.sleep(DELAY_MS / 1000 + 0.1)
        removed = mgr.run_retention().files_removed
        after = disk_usage(data_dir)
        print(
            f"  removed {removed} files; data directory {before:,} -> {after:,} bytes "
            f"({before - after:,} bytes reclaimed)"
        )
        show_partitions(mgr)

        say("clean shutdown, then a restart: the log start offsets must survive")
        mgr.close()
        mgr = LogManager.open(data_dir, config)
        for p in range(2):
            lg = mgr.get_log(TOPIC, p)
            print(f"  {TOPIC}-{p}: log start {lg.log_start_offset}, log end {lg.log_end_offset}")
        lg0 = mgr.get_log(TOPIC, 0)
        try:
            lg0.read(1199, 1024)
            print("  ERROR: a deleted record was readable")
            return 1
        except OffsetOutOfRangeError as exc:
            print(f"  reading offset 1199 of {TOPIC}-0 fails as Kafka's does: {exc}")
        first = lg0.read(1200, 1024)
        print(
            f"  reading offset 1200 returns {sum(s.length for s in first.slices):,} bytes from "
            f"{first.slices[0].path.name}"
        )
        info = lg0.append(build_batch([NewRecord(b"order-new", b"after restart")]))
        print(f"  a new append gets offset {info.base_offset}")
        mgr.close()
        say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
