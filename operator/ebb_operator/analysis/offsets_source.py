"""`__consumer_offsets` as a Spark Python data source, and the latest commit per key from it.

One input partition per offset range of the topic (a whole partition unless it is larger than
`maxRecordsPerSplit`), so executors read in parallel. Each record is decoded to one row; the reduction to
"the latest value per key, tombstones delete" is a DataFrame aggregation, not Python. Every record of a key
lives in one partition of the topic (the coordinator partitions by group), so the greatest log offset is
the latest value, exactly what the coordinator replays when it loads the partition.

Usage:
    spark.dataSource.register(ConsumerOffsetsDataSource)
    raw = read_offsets_topic(spark, connection)
Options: `connection` (required: the ClusterConnection as JSON, bootstrap servers and client properties),
`topic` (default __consumer_offsets), `maxRecordsPerSplit` (default 1000000),
`idleTimeoutSeconds` (default 30: a range that stops delivering fails the job rather than being cut short).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ebb_operator.analysis.offsets_reader import OFFSETS_TOPIC, OffsetRange, offset_ranges, read_range
from ebb_operator.analysis.offsets_records import GROUP_KIND, OFFSET_KIND, RAW_SCHEMA, decode_row
from ebb_operator.kafka import ClusterConnection

SOURCE_NAME = "ebb_consumer_offsets"


def _connection(options: dict[str, str]) -> ClusterConnection:
    if "connection" not in options:
        raise ValueError(f"the {SOURCE_NAME} data source needs the option connection (JSON)")
    return ClusterConnection.from_json(json.loads(options["connection"]))


class ConsumerOffsetsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.connection = _connection(options)
        self.topic = options.get("topic", OFFSETS_TOPIC)
        self.max_records = int(options.get("maxRecordsPerSplit", "1000000"))
        self.idle_timeout = float(options.get("idleTimeoutSeconds", "30"))

    def partitions(self) -> list[InputPartition]:
        # Each input partition carries one picklable OffsetRange; Spark ships it to the executor reading it.
        ranges = offset_ranges(self.connection, topic=self.topic, max_records_per_range=self.max_records)
        return [InputPartition(r) for r in ranges] or [InputPartition(None)]  # an empty topic: no rows

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        rng = partition.value
        if rng is None:
            return
        assert isinstance(rng, OffsetRange)
        for rec in read_range(self.connection, rng, idle_timeout=self.idle_timeout):
            row = decode_row(rec.partition, rec.offset, rec.key, rec.value)
            if row is not None:
                yield row


class ConsumerOffsetsDataSource(DataSource):
    """Spark Python data source (Spark 4 API) over Kafka's `__consumer_offsets` topic."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return RAW_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return ConsumerOffsetsReader(dict(self.options))


def read_offsets_topic(spark: SparkSession, connection: ClusterConnection, **options: str) -> DataFrame:
    """The raw rows of `__consumer_offsets` on `connection` (RAW_SCHEMA)."""
    spark.dataSource.register(ConsumerOffsetsDataSource)
    reader = spark.read.format(SOURCE_NAME).option("connection", json.dumps(connection.to_json()))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _latest(raw: DataFrame, kind: str, key: list[str], fields: list[str]) -> DataFrame:
    order = F.struct("source_partition", "source_offset")
    latest = (
        raw.filter(F.col("kind") == kind)
        .groupBy(*key)
        .agg(F.max_by(F.struct("tombstone", *fields), order).alias("v"))
    )
    # A tombstone as the latest value deletes the key (offset expired or deleted, group removed).
    return latest.filter(~F.col("v.tombstone")).select(*key, *(F.col(f"v.{f}").alias(f) for f in fields))


def latest_commits(raw: DataFrame) -> DataFrame:
    """The committed offset per (group, topic, partition), as the coordinator serves it (OFFSETS_SCHEMA)."""
    return _latest(
        raw, OFFSET_KIND, ["group", "topic", "partition"], ["committed_offset", "commit_timestamp"]
    )


def latest_group_metadata(raw: DataFrame) -> DataFrame:
    """The last stored state of each classic group: members and subscribed topics."""
    return _latest(
        raw,
        GROUP_KIND,
        ["group"],
        ["protocol_type", "generation", "members", "state_timestamp", "subscribed_topics"],
    )
