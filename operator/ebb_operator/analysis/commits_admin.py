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
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ebb_operator.analysis.catalog import COMMITS_ARROW_SCHEMA, COMMITS_SCHEMA, Catalog, unlisted_partition
from ebb_operator.kafka import ClusterAdmin, ClusterConnection, KafkaFailure

SOURCE_NAME = "ebb_committed_offsets"


class CommitsReadError(RuntimeError):
    """A group's committed offsets could not be read; the plan must not be computed without them."""


def read_groups(
    connection: ClusterConnection, groups: Sequence[str], first_gid: int, topics: Mapping[str, list[int]]
) -> pa.RecordBatch:
    """The commits of `groups` (ids from `first_gid` on) on the catalog's topics (`Catalog.reader_topics`),
    as one Arrow batch of catalog.COMMITS_SCHEMA."""
    tps: dict[tuple[str, int], tuple[int, int]] = {}
    for topic, (tid, first_tp, *partitions) in topics.items():
        for i, partition in enumerate(partitions):
            tps[topic, partition] = (tid, first_tp + i)
    gid_col: list[int] = []
    tid_col: list[int] = []
    tp_col: list[int] = []
    offset_col: list[int] = []
    first_col: list[bool] = []
    with ClusterAdmin(connection, request_timeout=60.0) as admin:
        found = admin.committed_offsets_of(groups)
    for gid, group in enumerate(groups, start=first_gid):
        offsets = found[group]
        if isinstance(offsets, KafkaFailure):
            raise CommitsReadError(f"cannot read the committed offsets of group {group}: {offsets}")
        seen: set[int] = set()
        for tp, offset in offsets.items():
            ids = tps.get((tp.topic, tp.partition))
            if ids is None:
                if tp.topic not in topics:
                    continue  # a topic the policy does not match
                tid = topics[tp.topic][0]
                ids = (tid, unlisted_partition(tid))  # the topic grew since the snapshot
                if ids[1] in seen:
                    continue
                seen.add(ids[1])
            gid_col.append(gid)
            tid_col.append(ids[0])
            tp_col.append(ids[1])
            offset_col.append(offset)
            first_col.append(ids[0] not in seen)
            seen.add(ids[0])
    return pa.RecordBatch.from_arrays(
        [
            pa.array(gid_col, pa.int32()),
            pa.array(tid_col, pa.int32()),
            pa.array(tp_col, pa.int32()),
            pa.array(offset_col, pa.int64()),
            pa.array(first_col, pa.bool_()),
        ],
        schema=COMMITS_ARROW_SCHEMA,
    )


class CommittedOffsetsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.connection = ClusterConnection.from_json(json.loads(options["connection"]))
        self.groups: list[str] = json.loads(options["groups"])
        self.topics: dict[str, list[int]] = json.loads(options["topics"])
        self.per_split = max(1, int(options.get("groupsPerSplit", "100")))

    def partitions(self) -> list[InputPartition]:
        starts = range(0, len(self.groups), self.per_split)
        return [InputPartition(i) for i in starts] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        start = partition.value
        if start is not None:
            yield read_groups(
                self.connection, self.groups[start : start + self.per_split], start, self.topics
            )


class CommittedOffsetsDataSource(DataSource):
    """Spark Python data source (Spark 4 API) of the committed offsets of a run's groups."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return COMMITS_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return CommittedOffsetsReader(dict(self.options))


def read_committed_offsets(
    spark: SparkSession, connection: ClusterConnection, catalog: Catalog, groups_per_split: int = 100
) -> DataFrame:
    """The commits of the catalog's groups on its topics (catalog.COMMITS_SCHEMA), read by Spark tasks."""
    spark.dataSource.register(CommittedOffsetsDataSource)
    return (
        spark.read.format(SOURCE_NAME)
        .option("connection", json.dumps(connection.to_json()))
        .option("groups", json.dumps(list(catalog.groups)))
        .option("topics", json.dumps(catalog.reader_topics()))
        .option("groupsPerSplit", str(groups_per_split))
        .load()
    )
