"""Committed offsets through the Admin API: OffsetFetch for many groups per request (KIP-709), spread over
Spark tasks by group, handed to Spark as Arrow batches (no per-row Python on the Spark side).

The default offsets source: it costs the number of live commits, not the size of `__consumer_offsets`'s
log, and needs only DESCRIBE on groups, which managed Kafka services grant where they refuse reads of
`__consumer_offsets`. It has no commit timestamps (OffsetFetch carries none): a group's inactivity then
comes from how long the operator has seen it empty (docs/analysis.md).

A group whose commits cannot be read fails the task, and so the run: a plan without one group's commits
could delete what that group has not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, KafkaFailure

SOURCE_NAME = "ebb_committed_offsets"
SCHEMA = "group string, topic string, partition int, committed_offset long, commit_timestamp long"
ARROW_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("commit_timestamp", pa.int64()),
    ]
)


class CommitsReadError(RuntimeError):
    """A group's committed offsets could not be read; the plan must not be computed without them."""


def read_groups(connection: ClusterConnection, groups: list[str]) -> pa.RecordBatch:
    """One task's groups, as one Arrow batch."""
    columns: dict[str, list[object]] = {name: [] for name in ARROW_SCHEMA.names}
    with ClusterAdmin(connection, request_timeout=60.0) as admin:
        for group, found in admin.committed_offsets_of(groups).items():
            if isinstance(found, KafkaFailure):
                raise CommitsReadError(f"cannot read the committed offsets of group {group}: {found}")
            for tp, offset in found.items():
                columns["group"].append(group)
                columns["topic"].append(tp.topic)
                columns["partition"].append(tp.partition)
                columns["committed_offset"].append(offset)
                columns["commit_timestamp"].append(None)
    return pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)


class CommittedOffsetsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.connection = ClusterConnection.from_json(json.loads(options["connection"]))
        self.groups: list[str] = json.loads(options["groups"])
        self.per_split = max(1, int(options.get("groupsPerSplit", "100")))

    def partitions(self) -> list[InputPartition]:
        chunks = [self.groups[i : i + self.per_split] for i in range(0, len(self.groups), self.per_split)]
        return [InputPartition(c) for c in chunks] or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        groups = partition.value
        if groups:
            yield read_groups(self.connection, groups)


class CommittedOffsetsDataSource(DataSource):
    """Spark Python data source (Spark 4 API) of the committed offsets of the named groups."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return CommittedOffsetsReader(dict(self.options))


def read_committed_offsets(
    spark: SparkSession, connection: ClusterConnection, groups: list[str], groups_per_split: int = 100
) -> DataFrame:
    """Committed offsets of `groups` (plan.OFFSETS_SCHEMA), read by Spark tasks."""
    spark.dataSource.register(CommittedOffsetsDataSource)
    return (
        spark.read.format(SOURCE_NAME)
        .option("connection", json.dumps(connection.to_json()))
        .option("groups", json.dumps(sorted(groups)))
        .option("groupsPerSplit", str(groups_per_split))
        .load()
    )
