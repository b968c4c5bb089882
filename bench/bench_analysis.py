"""The analysis job: plan time at scale, the whole job against a real broker, decode throughput, and how much
disk consumed retention saves.

`python -m bench analysis` runs the default cases; `python -m bench.bench_analysis CASE...` runs some:

1. plan: 10k partitions x 1k groups (10 M committed offsets) on local[2]. The commits, in the form the
   Admin-API source hands them to Spark (catalog.COMMITS_SCHEMA), are written to Parquet once; timed:
   reading them into Spark's cache, then the plan alone (`compute_plan` on the cached commits until the
   collected result). Next to it the per-group script an admin-API tool would be: fetch each group's
   offsets (one dict per group, as OffsetFetch answers; generated, timed apart) and fold the minimum per
   partition in Python. Same inputs; the cuts must be identical (0 differ).
2. scale: the same at 100k partitions x 1k groups (100 M commits), in a child process whose Spark driver
   has 4 GiB (local[2]); time and peak resident memory of both sides. Not in the default run (minutes).
3. job: the whole job as the operator runs it (`python -m ebb_operator.analysis --request`, a process:
   Spark start, snapshot, commits read from a real Apache Kafka with OffsetFetch, plan, the plan written
   back) for 10k partitions x 1k groups committed on the broker; the job's own log says where the time
   went. Setup (topics, records, 10 M commits) is not timed.
4. decode: __consumer_offsets records decoded per second by one Python worker (the other source's cost).
5. retention: producers and consumers at different rates over simulated days; bytes on disk under time
   retention alone vs under a RetentionPolicy (plan computed by the real compute_plan every run) vs the
   minimum that must be kept (bytes some counted group has not read); unconsumed records deleted must be 0.
6. budget: one partition over simulated days with a group dead from day 2, under time retention, a
   RetentionPolicy without a budget and one with spec.budget EvictSlowest: bytes on disk (whole segments)
   and the records deleted unread, ground truth next to what the plans' evictions reported.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import SparkSession

from bench.report import emit
from ebb_operator.analysis import plan as P
from ebb_operator.analysis.catalog import COMMITS_ARROW_SCHEMA
from ebb_operator.analysis.offsets_records import decode_row
from ebb_operator.analysis.policy import AnalysisPolicy, BudgetRule
from ebb_operator.analysis.session import spark_session
from ebb_operator.analysis.snapshot import GroupState, PartitionState, Snapshot, TopicState
from ebb_operator.models.retention_policy import BudgetAction

PARTS_PER_TOPIC, GROUPS = 10, 1_000
HW, LOG_START = 1_000_000, 1_000
NOW = 1_800_000_000_000
HOUR = 3_600_000
MULT, MOD = 2_654_435_761, 1_000_003
SCALE_DRIVER_MEMORY = "4g"


def _committed(group: int, i: int) -> int:
    """The generated committed offset of group number `group` on partition number `i`."""
    rid = i * GROUPS + group
    return LOG_START + (rid * MULT) % MOD % (HW - LOG_START + 1)


def _time_offset(i: int) -> int:
    return LOG_START + (i * 7919) % (HW - LOG_START)


def _name(i: int) -> tuple[str, int]:
    return f"t{i // PARTS_PER_TOPIC}", i % PARTS_PER_TOPIC


def generated_snapshot(partitions: int) -> Snapshot:
    """Every group stable with one member and no subscriptions of record: the cut is the minimum commit."""
    return Snapshot(
        NOW,
        [PartitionState(*_name(i), LOG_START, HW, 1 << 30, _time_offset(i), None) for i in range(partitions)],
        [TopicState(f"t{t}", "delete", None) for t in range(partitions // PARTS_PER_TOPIC)],
        [GroupState(f"g{g}", "Stable", 1, (), None, None) for g in range(GROUPS)],
    )


def write_commits(path: Path, inputs: P.PlanInputs, partitions: int) -> None:
    """Every group's commit on every partition, in the run's ids (as the Admin-API source emits them)."""
    cat = inputs.catalog
    gid_of = {g: i for i, g in enumerate(cat.groups)}
    tp_of = {(p.topic, p.partition): tp for tp, p in enumerate(cat.partitions)}
    tps = pa.array([tp_of[_name(i)] for i in range(partitions)], pa.int32())
    tids = pa.array([cat.tp_topic[tp_of[_name(i)]] for i in range(partitions)], pa.int32())
    first = pa.array([i % PARTS_PER_TOPIC == 0 for i in range(partitions)])
    index = pa.array(range(partitions), pa.int64())
    with pq.ParquetWriter(path, COMMITS_ARROW_SCHEMA) as writer:
        for g in range(GROUPS):
            rid = pc.add(pc.multiply(index, GROUPS), g)
            offsets = pc.add(
                LOG_START, pc.remainder(pc.remainder(pc.multiply(rid, MULT), MOD), HW - LOG_START + 1)
            )
            gid = pa.array([gid_of[f"g{g}"]] * partitions, pa.int32())
            writer.write_table(
                pa.Table.from_arrays([gid, tids, tps, offsets, first], schema=COMMITS_ARROW_SCHEMA)
            )


def script_plan(partitions: int) -> tuple[dict[tuple[str, int], int | None], float, float]:
    """The per-group script: one OffsetFetch-shaped dict per group, folded into a per-partition minimum.
    Returns its cuts, the seconds spent folding and the seconds spent making the dicts (the fetch)."""
    low = [HW + 1] * partitions
    fetch_s = fold_s = 0.0
    for g in range(GROUPS):
        t0 = time.perf_counter()
        fetched = {_name(i): _committed(g, i) for i in range(partitions)}
        t1 = time.perf_counter()
        for i, off in enumerate(fetched.values()):  # every group commits every partition in this shape
            if off < low[i]:
                low[i] = off
        fold_s += time.perf_counter() - t1
        fetch_s += t1 - t0
    t1 = time.perf_counter()
    plan: dict[tuple[str, int], int | None] = {}
    for i in range(partitions):
        cut = min(low[i], _time_offset(i), HW)
        plan[_name(i)] = cut if cut > LOG_START else None
    return plan, fold_s + time.perf_counter() - t1, fetch_s


def _script_in_child(partitions: int, out: Any) -> None:
    plan, fold_s, fetch_s = script_plan(partitions)
    out.send((plan, fold_s, fetch_s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))


def _jvm_peak_bytes(spark: SparkSession) -> int | None:
    """Peak resident memory of the Spark driver's JVM (local mode: the executors too), from /proc."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return None
    status = Path(f"/proc/{proc.pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else None


def bench_plan(spark: SparkSession, partitions: int, work: Path) -> list[dict[str, Any]]:
    policy = AnalysisPolicy(namespace="b", name="b", consumed_retention_ms=HOUR, topics_include=("t.*",))
    t0 = time.perf_counter()
    inputs = P.prepare(generated_snapshot(partitions), policy, NOW)
    prepare_s = time.perf_counter() - t0
    parquet = work / f"commits-{partitions}.parquet"
    write_commits(parquet, inputs, partitions)
    t0 = time.perf_counter()
    commits = spark.read.parquet(str(parquet)).persist(StorageLevel.MEMORY_AND_DISK)
    n = commits.count()
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = P.compute_plan(commits, inputs)
    plan_s = time.perf_counter() - t0
    commits.unpersist()
    jvm_peak = _jvm_peak_bytes(spark)
    print(
        f"spark: prepare {prepare_s:.1f}s, commits into the cache {read_s:.1f}s, plan {plan_s:.1f}s",
        flush=True,
    )

    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_script_in_child, args=(partitions, send))
    child.start()
    expected, fold_s, fetch_s, script_peak = receive.recv()
    child.join()
    got = {(p.topic, p.partition): p.delete_before for p in result.partitions}
    disagree = sum(1 for k, v in expected.items() if got.get(k, -1) != v)
    print(
        f"script: fold {fold_s:.1f}s (+ {fetch_s:.1f}s making the dicts), cuts that differ: {disagree}",
        flush=True,
    )
    if disagree or len(got) != len(expected) or n != partitions * GROUPS:
        raise AssertionError(f"the Spark plan and the per-group script disagree on {disagree} partitions")
    return [
        {"case": "spark: commits into the cache (Parquet)", "partitions": partitions, "groups": GROUPS,
         "offsets": n, "seconds": read_s, "peak_MiB": None},
        {"case": "spark: prepare (driver: groups, ids)", "partitions": partitions, "groups": GROUPS,
         "offsets": n, "seconds": prepare_s, "peak_MiB": None},
        {"case": "spark: the plan, local[2]", "partitions": partitions, "groups": GROUPS, "offsets": n,
         "seconds": plan_s, "peak_MiB": round(jvm_peak / 2**20) if jvm_peak else None},
        {"case": "script: fold per group (1 process)", "partitions": partitions, "groups": GROUPS,
         "offsets": n, "seconds": fold_s, "peak_MiB": round(script_peak / 2**20)},
        {"case": "script: making the dicts (the fetch)", "partitions": partitions, "groups": GROUPS,
         "offsets": n, "seconds": fetch_s, "peak_MiB": None},
    ]  # fmt: skip


def bench_decode() -> list[dict[str, Any]]:
    def s16(s: str) -> bytes:
        b = s.encode()
        return struct.pack(">h", len(b)) + b

    key = struct.pack(">h", 1) + s16("orders-consumer") + s16("orders") + struct.pack(">i", 7)
    value = struct.pack(">hqi", 3, 123456, 5) + s16("") + struct.pack(">q", NOW)
    n = 200_000
    t0 = time.perf_counter()
    for i in range(n):
        decode_row(0, i, key, value)
    s = time.perf_counter() - t0
    return [{"case": "decode OffsetCommit v3 record", "records": n, "seconds": s, "records_per_s": n / s}]


# -- retention simulation -----------------------------------------------------------------------------

MINUTE = 60_000
RECORD_BYTES = 1_024
DAYS = 7
RUN_EVERY_MIN = 240  # the policy's schedule.interval: 4h
SCENARIO: dict[str, tuple[int, dict[str, tuple[str, Any]]]] = {
    # topic: (records per minute, {group: consumer behaviour})
    "clicks": (60, {"realtime": ("lag", 2), "warehouse": ("daily", 2 * 60)}),
    "orders": (10, {"billing": ("lag", 1), "audit": ("outage", (2 * 1440, 4 * 1440))}),
    "logs": (30, {"indexer": ("lag", 5)}),
}


def _position(behaviour: tuple[str, Any], minute: int, produced_until: Any) -> int:
    """Committed offset of a consumer at `minute` (produced_until(m) = records produced before minute m)."""
    kind, arg = behaviour
    if kind == "lag":  # keeps up, arg minutes behind
        return produced_until(max(0, minute - arg))
    if kind == "daily":  # a batch job reading everything once a day at minute arg of the day
        day_start = minute - (minute - arg) % 1440 if minute >= arg else 0
        return produced_until(day_start)
    start, end = arg  # keeps up except during an outage, then catches up at once
    return produced_until(start if start <= minute < end else minute)


def bench_retention(spark: SparkSession) -> list[dict[str, Any]]:
    consumed_retention_ms = HOUR
    policy = AnalysisPolicy(
        namespace="sim", name="sim", consumed_retention_ms=consumed_retention_ms, topics_include=(".*",)
    )
    minutes = DAYS * 1440
    log_start = {t: 0 for t in SCENARIO}
    totals: dict[str, float] = defaultdict(float)
    unconsumed_deleted = {"policy": 0, "time 7d": 0, "time 1d": 0}
    for m in range(0, minutes + 1, 10):
        now = NOW + m * MINUTE
        positions = {}
        for t, (rate, groups) in SCENARIO.items():
            produced = rate * m  # offsets [0, produced) exist; offset i was produced at minute i // rate

            def until(x: int, rate: int = rate) -> int:
                return rate * x

            positions[t] = {g: _position(b, m, until) for g, b in groups.items()}
            min_pos = min(positions[t].values())
            totals["minimum"] += (produced - max(min_pos, 0)) * RECORD_BYTES
            for label, days in (("time 7d", 7), ("time 1d", 1)):
                start = max(0, min(produced, rate * (m - days * 1440)))  # time retention cut
                totals[label] += (produced - start) * RECORD_BYTES
                unconsumed_deleted[label] = max(unconsumed_deleted[label], max(0, start - min_pos))
        if m % RUN_EVERY_MIN == 0 and m > 0:
            offsets = [(g, t, 0, pos, now) for t, ps in positions.items() for g, pos in ps.items()]
            parts = [
                PartitionState(t, 0, log_start[t], rate * m, rate * m * RECORD_BYTES,
                               min(rate * m, rate * max(0, m - consumed_retention_ms // MINUTE)), None)
                for t, (rate, _) in SCENARIO.items()
            ]  # fmt: skip
            snapshot = Snapshot(now, parts, [TopicState(t, "delete", None) for t in SCENARIO])
            plan = P.plan_from_offsets(
                spark.createDataFrame(offsets, P.OFFSETS_SCHEMA), snapshot, policy, now
            ).partitions
            for r in plan:
                if r.delete_before is not None:
                    unconsumed_deleted["policy"] += max(0, r.delete_before - min(positions[r.topic].values()))
                    log_start[r.topic] = max(log_start[r.topic], r.delete_before)
        for t, (rate, _) in SCENARIO.items():  # forced retention (retention.ms = 7d), the backstop
            log_start[t] = max(log_start[t], min(rate * m, rate * (m - 7 * 1440)))
        for t, (rate, _) in SCENARIO.items():
            totals["policy"] += (rate * m - log_start[t]) * RECORD_BYTES
    samples = minutes // 10 + 1
    rows = []
    names = {
        "policy": "RetentionPolicy (1h consumed, every 4h) + 7d forced",
        "minimum": "minimum (unconsumed)",
    }
    for label in ("time 7d", "time 1d", "policy", "minimum"):
        rows.append(
            {
                "retention": names.get(label, f"time retention {label[5:]}"),
                "avg_MiB_on_disk": totals[label] / samples / 2**20,
                "unconsumed_records_deleted": unconsumed_deleted.get(label, 0),
            }
        )  # fmt: skip
    return rows


# -- budget simulation ---------------------------------------------------------------------------------

BUDGET_RATE = 60  # records per minute, one partition
SEGMENT_RECORDS = 6 * 60 * BUDGET_RATE  # a segment holds 6 hours; brokers free whole segments
BUDGET_BYTES = 24 * 60 * BUDGET_RATE * RECORD_BYTES  # maxBytesPerPartition: a day of records
DEAD_FROM_MIN = 2 * 1440  # the `batch` group stops reading on day 2 and never comes back


def _on_disk(produced: int, log_start: int) -> int:
    """Bytes a broker keeps: from the start of the segment holding the log start."""
    return (produced - log_start + log_start % SEGMENT_RECORDS) * RECORD_BYTES


def _budget_case(
    spark: SparkSession, label: str, budget: BudgetRule | None, time_days: int | None
) -> dict[str, Any]:
    """One partition, `live` keeping up two minutes behind and `batch` dead from day 2, for DAYS days: the
    broker's time retention (`time_days`), or a RetentionPolicy (1h consumed, every 4h, with `budget`)
    with a 7-day retention.ms behind it. Ground truth: the records deleted below `batch`'s commit."""
    policy = AnalysisPolicy(
        namespace="sim", name="sim", consumed_retention_ms=HOUR, topics_include=(".*",), budget=budget
    )
    log_start, reported, peak, peak_after_run, total, samples = 0, 0, 0, 0, 0, 0
    for m in range(0, DAYS * 1440 + 1, 10):
        produced, now = BUDGET_RATE * m, NOW + m * MINUTE
        positions = {"live": BUDGET_RATE * max(0, m - 2), "batch": BUDGET_RATE * min(m, DEAD_FROM_MIN)}
        ran = time_days is None and m % RUN_EVERY_MIN == 0 and m > 0
        if ran:
            offsets = [(g, "events", 0, pos, now) for g, pos in positions.items()]
            state = PartitionState(
                "events", 0, log_start, produced, _on_disk(produced, log_start),
                BUDGET_RATE * max(0, m - HOUR // MINUTE), None,
                age_offset=produced,  # no maxAge here: bytes only
            )  # fmt: skip
            snapshot = Snapshot(now, [state], [TopicState("events", "delete", None)])
            result = P.plan_from_offsets(
                spark.createDataFrame(offsets, P.OFFSETS_SCHEMA), snapshot, policy, now
            )
            for r in result.partitions:
                if r.delete_before is not None:
                    log_start = max(log_start, r.delete_before)
            reported += sum(g.records for e in result.evictions for g in e.groups if g.group == "batch")
        backstop = 7 if time_days is None else time_days  # retention.ms, applied by the broker
        log_start = max(log_start, min(produced, BUDGET_RATE * (m - backstop * 1440)))
        disk = _on_disk(produced, log_start)
        peak = max(peak, disk)
        if ran:
            peak_after_run = max(peak_after_run, disk)
        total += disk
        samples += 1
    truth = max(0, log_start - positions["batch"])  # log starts only grow; batch's commit stopped on day 2
    return {
        "retention": label,
        "avg_MiB_on_disk": total / samples / 2**20,
        "max_MiB_on_disk": peak / 2**20,
        "max_MiB_after_a_run": peak_after_run / 2**20 if time_days is None else "",
        "unread_records_deleted": truth,
        "unread_reported_by_the_plan": reported if budget is not None else "",
    }


def bench_budget(spark: SparkSession) -> list[dict[str, Any]]:
    evict = BudgetRule(max_bytes=BUDGET_BYTES, max_age_ms=None, action=BudgetAction.EVICT_SLOWEST)
    return [
        _budget_case(spark, "time retention 7d", None, 7),
        _budget_case(spark, "time retention 1d", None, 1),
        _budget_case(spark, "RetentionPolicy, no budget (+ 7d)", None, None),
        _budget_case(spark, "RetentionPolicy, budget 1 day EvictSlowest (+ 7d)", evict, None),
    ]


# -- the whole job against Apache Kafka ----------------------------------------------------------------


def _setup_cluster(bootstrap: str, topics: int, groups: int) -> None:
    """`topics` x PARTS_PER_TOPIC partitions of 100 records (the first 50 two hours old), and `groups`
    groups each committed on every partition at 40-100 (kafka-python's alter_group_offsets: one
    OffsetCommit each), so with consumedRetention 1h every partition is cut at its slowest group."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from bench.group_commits import commit_groups

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"t{t}" for t in range(topics)]
    for i in range(0, len(names), 100):  # KRaft refuses a batch of more than 10 000 metadata records
        batch = [NewTopic(n, PARTS_PER_TOPIC, 1) for n in names[i : i + 100]]
        for f in admin.create_topics(batch, operation_timeout=120).values():
            f.result(300)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000})
    old, new = int(time.time() * 1000) - 2 * HOUR, int(time.time() * 1000)
    for n in names:
        for p in range(PARTS_PER_TOPIC):
            for i in range(100):
                while True:
                    try:
                        producer.produce(n, value=b"x" * 100, partition=p, timestamp=old if i < 50 else new)
                        break
                    except BufferError:
                        producer.poll(0.1)
    if producer.flush(300) != 0:
        raise RuntimeError("records not delivered")
    commit_groups(
        bootstrap,
        (
            (
                f"g{g}",
                {
                    (f"t{i // PARTS_PER_TOPIC}", i % PARTS_PER_TOPIC): 40 + _committed(g, i) % 61
                    for i in range(topics * PARTS_PER_TOPIC)
                },
            )
            for g in range(groups)
        ),
        request_timeout_ms=120_000,
    )


def bench_job(work: Path, topics: int = 1_000, groups: int = GROUPS) -> list[dict[str, Any]]:
    from harness.kafka import apache_kafka

    rows = []
    # The group coordinator keeps every committed offset in memory: 10 M of them need a few GiB.
    with apache_kafka(work / "kafka", {"num.partitions": str(PARTS_PER_TOPIC)}, heap="4g") as kafka:
        t0 = time.perf_counter()
        _setup_cluster(kafka.bootstrap_servers, topics, groups)
        print(f"setup: {time.perf_counter() - t0:.0f}s", flush=True)
        request = work / "request.json"
        request.write_text(
            json.dumps(
                {
                    "policy": {"namespace": "bench", "name": "bench"},
                    "spec": {"topics": {"include": ["t.*"]}, "consumedRetention": "1h"},
                    "runId": "bench",
                    "bootstrapServers": kafka.bootstrap_servers,
                }
            )
        )
        out = work / "plan.json"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ebb_operator.analysis", "--request", str(request), "--output", str(out),
             "--master", "local[2]"],
            capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        job_s = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"the job failed:\n{proc.stderr[-4000:]}")
        plan = json.loads(out.read_text())
        phases = [line.split(": ", 1)[1] for line in proc.stderr.splitlines() if " took " in line]
        print("\n".join(phases), flush=True)
        rows.append(
            {
                "case": "whole job on Apache Kafka (a process: Spark, snapshot, OffsetFetch, plan, plan out)",
                "partitions": plan["summary"]["partitions"],
                "groups": groups,
                "offsets": topics * PARTS_PER_TOPIC * groups,
                "cuts": len(plan["deletes"]),
                "seconds": job_s,
            }
        )
        rows += [{"case": f"  {p}"} for p in phases]
    return rows


CASES: dict[str, Callable[[Path], None]] = {}


def _plan_case(partitions: int, name: str, driver_memory: str | None = None) -> Callable[[Path], None]:
    def run(work: Path) -> None:
        conf = {"spark.driver.memory": driver_memory} if driver_memory else None
        spark = spark_session("local[2]", app_name="ebb-bench-analysis", conf=conf)
        spark.sparkContext.setLogLevel("ERROR")
        try:
            emit(
                name,
                bench_plan(spark, partitions, work),
                notes=f"load average {os.getloadavg()[0]:.1f}. Same inputs, same cuts (checked). Driver "
                f"memory {driver_memory or 'default'}; peak_MiB: resident memory (JVM, or the script's "
                "process). The script's dict making stands for its OffsetFetch answers.",
            )
        finally:
            spark.stop()

    return run


def _job_case(work: Path) -> None:
    emit("analysis_job", bench_job(work), notes=f"load average {os.getloadavg()[0]:.1f}; setup not timed.")


def _small_cases(work: Path) -> None:
    emit("analysis_decode", bench_decode(), notes="One Python worker; Spark runs one per core.")
    spark = spark_session("local[2]", app_name="ebb-bench-analysis")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        emit(
            "analysis_retention",
            bench_retention(spark),
            notes=f"{DAYS} simulated days, 3 topics, 5 groups (one daily batch reader, one 2-day outage); "
            "bytes sampled every 10 simulated minutes; record-level cuts (brokers free whole segments).",
        )
        emit(
            "analysis_budget",
            bench_budget(spark),
            notes=f"{DAYS} simulated days, one partition at {BUDGET_RATE} records/min of {RECORD_BYTES} B, "
            f"{SEGMENT_RECORDS // BUDGET_RATE // 60}h segments; group `live` keeps up, `batch` stops on "
            f"day 2; budget maxBytesPerPartition {BUDGET_BYTES / 2**20:.1f} MiB, runs every "
            f"{RUN_EVERY_MIN // 60}h. "
            "unread_records_deleted: ground truth (records deleted below batch's commit).",
        )
    finally:
        spark.stop()


CASES.update(
    plan=_plan_case(10_000, "analysis_plan"),
    scale=_plan_case(100_000, "analysis_plan_100m", SCALE_DRIVER_MEMORY),
    job=_job_case,
    small=_small_cases,
)
DEFAULT = ("plan", "job", "small")


def run_cases(names: list[str]) -> None:
    """Each case in a process of its own: a Spark driver's memory is fixed when its JVM starts."""
    for name in names:
        if name not in CASES:
            raise SystemExit(f"unknown case {name!r}; known: {', '.join(CASES)}")
        print(f"--> analysis {name}", flush=True)
        subprocess.run([sys.executable, "-m", "bench.bench_analysis", "--one", name], check=True)


def main() -> None:
    run_cases(list(DEFAULT))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        with tempfile.TemporaryDirectory(prefix="ebb-bench-analysis-") as tmp:
            CASES[sys.argv[2]](Path(tmp))
    else:
        run_cases(sys.argv[1:] or list(DEFAULT))
