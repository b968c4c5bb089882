"""The analysis job: plan time at scale, decode throughput, and how much disk consumed retention saves.

1. plan: 10k partitions x 1k groups (10 M committed offsets) on local[2], the Spark plan against a
   straightforward per-group script (the shape of an admin-API tool: fetch each group's offsets, fold the
   minimum per partition in Python). Both get the same generated inputs and must produce the same cuts.
   Included: the plan computation and collecting its result. Not included: reading __consumer_offsets from
   Kafka (Spark side) and the 1k OffsetFetch round trips (script side); see the decode row for the
   former's per-record cost.
2. decode: __consumer_offsets records decoded per second by one Python worker (the data source's cost).
3. retention: producers and consumers at different rates over simulated days; bytes on disk under time
   retention alone vs under a RetentionPolicy (plan computed by the real compute_plan every run) vs the
   minimum that must be kept (bytes some counted group has not read); unconsumed records deleted must be 0.
"""

from __future__ import annotations

import struct
import time
from collections import defaultdict
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.report import emit
from ebb_operator.analysis import plan as P
from ebb_operator.analysis.offsets_records import decode_row
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.session import spark_session

TOPICS, PARTS_PER_TOPIC, GROUPS = 1_000, 10, 1_000
HW, LOG_START = 1_000_000, 1_000
NOW = 1_800_000_000_000
HOUR = 3_600_000
MULT, MOD = 2_654_435_761, 1_000_003


def _committed(group: int, tp: int) -> int:
    """The generated committed offset of a group on partition number tp (same formula as in Spark)."""
    rid = tp * GROUPS + group
    return LOG_START + (rid * MULT) % MOD % (HW - LOG_START + 1)


def _time_offset(tp: int) -> int:
    return LOG_START + (tp * 7919) % (HW - LOG_START)


def _spark_inputs(spark: SparkSession) -> tuple[DataFrame, DataFrame, DataFrame, DataFrame]:
    n = TOPICS * PARTS_PER_TOPIC
    rid = F.col("id")
    tp = (rid / GROUPS).cast("long")
    offsets = spark.range(n * GROUPS).select(
        F.concat(F.lit("g"), (rid % GROUPS).cast("string")).alias("group"),
        F.concat(F.lit("t"), (tp / PARTS_PER_TOPIC).cast("long").cast("string")).alias("topic"),
        (tp % PARTS_PER_TOPIC).cast("int").alias("partition"),
        (F.lit(LOG_START) + F.pmod(rid * F.lit(MULT), F.lit(MOD)) % F.lit(HW - LOG_START + 1)).alias(
            "committed_offset"
        ),
        F.lit(NOW - 60_000).alias("commit_timestamp"),
    )
    partitions = spark.range(n).select(
        F.concat(F.lit("t"), (rid / PARTS_PER_TOPIC).cast("long").cast("string")).alias("topic"),
        (rid % PARTS_PER_TOPIC).cast("int").alias("partition"),
        F.lit(LOG_START).alias("log_start"),
        F.lit(HW).alias("high_watermark"),
        F.lit(1 << 30).alias("size_bytes"),
        (F.lit(LOG_START) + (rid * 7919) % F.lit(HW - LOG_START)).alias("time_offset"),
        F.lit(None).cast("string").alias("error"),
    )
    topics = spark.range(TOPICS).select(
        F.concat(F.lit("t"), rid.cast("string")).alias("topic"),
        F.lit("delete").alias("cleanup_policy"),
        F.lit(None).cast("string").alias("error"),
    )
    groups = spark.range(GROUPS).select(
        F.concat(F.lit("g"), rid.cast("string")).alias("group"),
        F.lit("Stable").alias("state"),
        F.lit(1).alias("members"),
        F.array().cast("array<string>").alias("topics"),
        F.lit(None).cast("string").alias("error"),
    )
    return offsets, partitions, topics, groups


def _script_plan() -> dict[tuple[str, int], int | None]:
    """The per-group script: one OffsetFetch-shaped dict per group, folded into a per-partition minimum."""
    n = TOPICS * PARTS_PER_TOPIC
    low = [HW + 1] * n
    for g in range(GROUPS):
        fetched = {(f"t{tp // PARTS_PER_TOPIC}", tp % PARTS_PER_TOPIC): _committed(g, tp) for tp in range(n)}
        for i, off in enumerate(fetched.values()):  # every group commits every partition in this shape
            if off < low[i]:
                low[i] = off
    plan: dict[tuple[str, int], int | None] = {}
    for tp in range(n):
        cut = min(low[tp], _time_offset(tp), HW)
        plan[f"t{tp // PARTS_PER_TOPIC}", tp % PARTS_PER_TOPIC] = cut if cut > LOG_START else None
    return plan


def bench_plan(spark: SparkSession) -> list[dict[str, Any]]:
    policy = AnalysisPolicy(namespace="b", name="b", consumed_retention_ms=HOUR, topics_include=("t.*",))
    t0 = time.perf_counter()
    result = P.summarize(P.compute_plan(*_spark_inputs(spark), policy, NOW))
    spark_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    expected = _script_plan()
    script_s = time.perf_counter() - t0
    got = {(p.topic, p.partition): p.delete_before for p in result.partitions}
    disagree = sum(1 for k, v in expected.items() if got.get(k, -1) != v)
    print(f"spark {spark_s:.1f}s, script {script_s:.1f}s, partitions that disagree: {disagree}", flush=True)
    if disagree or len(got) != len(expected):
        raise AssertionError(f"the Spark plan and the per-group script disagree on {disagree} partitions")
    n = TOPICS * PARTS_PER_TOPIC
    return [
        {"case": "spark plan, local[2]", "partitions": n, "groups": GROUPS, "offsets": n * GROUPS,
         "seconds": spark_s},
        {"case": "per-group script, 1 Python process", "partitions": n, "groups": GROUPS,
         "offsets": n * GROUPS, "seconds": script_s},
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
                (t, 0, log_start[t], rate * m, rate * m * RECORD_BYTES,
                 min(rate * m, rate * max(0, m - consumed_retention_ms // MINUTE)), None)
                for t, (rate, _) in SCENARIO.items()
            ]  # fmt: skip
            plan = P.compute_plan(
                spark.createDataFrame(offsets, P.OFFSETS_SCHEMA),
                spark.createDataFrame(parts, P.PARTITIONS_SCHEMA),
                spark.createDataFrame([(t, "delete", None) for t in SCENARIO], P.TOPICS_SCHEMA),
                spark.createDataFrame([], P.GROUPS_SCHEMA),
                policy,
                now,
            ).collect()
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


def main() -> None:
    spark = spark_session("local[2]", app_name="ebb-bench-analysis")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        emit(
            "analysis_plan",
            bench_plan(spark),
            notes="Same generated inputs, same cuts (checked). Spark side excludes reading "
            "__consumer_offsets; script side excludes 1k OffsetFetch round trips. Shared, loaded machine.",
        )
        emit("analysis_decode", bench_decode(), notes="One Python worker; Spark runs one per core.")
        emit(
            "analysis_retention",
            bench_retention(spark),
            notes=f"{DAYS} simulated days, 3 topics, 5 groups (one daily batch reader, one 2-day outage); "
            "bytes sampled every 10 simulated minutes; record-level cuts (brokers free whole segments).",
        )
    finally:
        spark.stop()
