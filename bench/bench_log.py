"""Log engine throughput: append (100 B / 1 KiB records in 16 KiB / 1 MiB batches), read, cleaner.

Runs the engine in-process on a temp directory (page cache, no fsync on the append path, which is the
engine's acknowledgement rule); prints a table and writes bench/results/log.json.
Environment: EBB_BENCH_APPEND_MB (default 256) sizes the append runs, EBB_BENCH_CLEAN_RECORDS
(default 400000) the cleaner run.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import emit
from ebb_broker.config import BrokerConfig
from ebb_broker.log.log_manager import LogManager
from ebb_broker.log.records import NewRecord, build_batch

APPEND_MB = int(os.environ.get("EBB_BENCH_APPEND_MB", "256"))
CLEAN_RECORDS = int(os.environ.get("EBB_BENCH_CLEAN_RECORDS", "400000"))


def _batch(record_bytes: int, batch_bytes: int, keys: list[int] | None = None) -> bytes:
    n = max(1, batch_bytes // (record_bytes + 10))
    value = b"x" * record_bytes
    if keys is None:
        return build_batch([NewRecord(None, value) for _ in range(n)])
    return build_batch([NewRecord(b"key-%d" % k, value) for k in keys[:n]])


def bench_append(tmp: Path, record_bytes: int, batch_bytes: int) -> dict[str, Any]:
    config = BrokerConfig.parse({}).log_manager_config()
    mgr = LogManager.open(tmp / f"append-{record_bytes}-{batch_bytes}", config)
    mgr.create_topic("bench", 1, {"segment.bytes": str(128 * 1024 * 1024), "max.message.bytes": str(2 << 20)})
    lg = mgr.get_log("bench", 0)
    raw = _batch(record_bytes, batch_bytes)
    count = int.from_bytes(raw[57:61], "big")
    n = max(1, APPEND_MB * 1024 * 1024 // len(raw))
    t0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        lg.append(raw)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    total = n * len(raw)
    row = {
        "case": f"append {record_bytes} B records, {batch_bytes // 1024} KiB batches",
        "MB/s": total / elapsed / 1e6,
        "records/s": n * count / elapsed,
        "records/cpu-s": n * count / cpu,
        "MB/cpu-s": total / cpu / 1e6,
        "batches/s": n / elapsed,
        "MB": total / 1e6,
    }
    if batch_bytes >= 1024 * 1024 and record_bytes == 1024:
        row.update(bench_read(lg))
    mgr.close()
    shutil.rmtree(tmp / f"append-{record_bytes}-{batch_bytes}")
    return row


def bench_read(lg: Any) -> dict[str, Any]:
    """Consumer-style reads of 1 MiB: slice lookup plus pread of the bytes (what to_bytes() does)."""
    offset, total = lg.log_start_offset, 0
    t0 = time.perf_counter()
    while offset < lg.high_watermark:
        result = lg.read(offset, 1024 * 1024)
        data = result.to_bytes()
        total += len(data)
        # advance past whole batches only (the last one may be partial, as in Kafka)
        pos, nxt = 0, offset
        while pos + 61 <= len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
            if pos + size > len(data):
                break
            base = int.from_bytes(data[pos : pos + 8], "big")
            nxt = base + int.from_bytes(data[pos + 23 : pos + 27], "big") + 1
            pos += size
        offset = nxt
    elapsed = time.perf_counter() - t0
    return {"read MB/s": total / elapsed / 1e6}


def bench_cleaner(tmp: Path, shuffled: bool) -> dict[str, Any]:
    """Sequential keys (each batch all-old or all-new) or shuffled keys (every batch partly retained)."""
    mgr = LogManager.open(tmp / "clean", BrokerConfig.parse({}).log_manager_config())
    mgr.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": str(32 * 1024 * 1024)})
    lg = mgr.get_log("c", 0)
    nkeys = CLEAN_RECORDS // 10
    order = [i % nkeys for i in range(CLEAN_RECORDS + 200)]
    if shuffled:
        random.Random(7).shuffle(order)
    written = 0
    while written < CLEAN_RECORDS:
        raw = _batch(100, 16 * 1024, keys=order[written:])
        lg.append(raw)
        written += int.from_bytes(raw[57:61], "big")
    lg.roll()
    size = lg.size_in_bytes()
    cpu0 = time.process_time()
    report = mgr.run_cleaner()
    cpu = time.process_time() - cpu0
    assert report is not None
    s = report.stats
    row = {
        "case": f"cleaner, {written:,} x 100 B, {nkeys:,} keys, {'shuffled' if shuffled else 'sequential'}",
        "MB/s": s.bytes_read / s.elapsed_s / 1e6,
        "records/s": s.records_read / s.elapsed_s,
        "records/cpu-s": s.records_read / cpu,
        "MB/cpu-s": s.bytes_read / cpu / 1e6,
        "MB": size / 1e6,
        "retained": s.records_retained,
    }
    mgr.close()
    shutil.rmtree(tmp / "clean")
    return row


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as d:
        tmp = Path(d)
        for record_bytes in (100, 1024):
            for batch_bytes in (16 * 1024, 1024 * 1024):
                print(f"  append {record_bytes} B records, {batch_bytes // 1024} KiB batches ...", flush=True)
                rows.append(bench_append(tmp, record_bytes, batch_bytes))
        for shuffled in (False, True):
            print(f"  cleaner over {CLEAN_RECORDS:,} records (shuffled keys: {shuffled}) ...", flush=True)
            rows.append(bench_cleaner(tmp, shuffled))
    emit(
        "log",
        rows,
        notes="in-process, page cache (no fsync per append: see docs/log-engine.md); on a shared machine "
        "compare the per-CPU-second columns",
    )


if __name__ == "__main__":
    main()
