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
from typing import NamedTuple

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ebb_operator.analysis.catalog import COMMITS_ARROW_SCHEMA, COMMITS_SCHEMA, Catalog, unlisted_partition
from ebb_operator.kafka import ClusterAdmin, ClusterConnection, KafkaFailure

SOURCE_NAME = "ebb_committed_offsets"


class CommitsReadError(RuntimeError):
    """A group's committed offsets could not be read; the plan must not be computed without them."""


class _Topic(NamedTuple):
    tid: int
    first_tp: int
    size: int  # the snapshot lists partitions 0 .. size-1 (tp = first_tp + partition), unless
    listed: dict[int, int] | None  # partition -> tp, where it lists others

    def tp(self, partition: int) -> int | None:
        """The partition's id; None for a partition the snapshot does not list."""
        if self.listed is not None:
            return self.listed.get(partition)
        return self.first_tp + partition if 0 <= partition < self.size else None


def _topic_index(topics: Mapping[str, list[int]]) -> dict[str, _Topic]:
    index = {}
    for topic, (tid, first_tp, *partitions) in topics.items():
        contiguous = partitions == list(range(len(partitions)))
        listed = None if contiguous else {p: first_tp + i for i, p in enumerate(partitions)}
        index[topic] = _Topic(tid, first_tp, len(partitions), listed)
    return index


def read_groups(
    connection: ClusterConnection, groups: Sequence[str], first_gid: int, topics: Mapping[str, list[int]]
) -> pa.RecordBatch:
    """The commits of `groups` (ids from `first_gid` on) on the catalog's topics (`Catalog.reader_topics`),
    as one Arrow batch of catalog.COMMITS_SCHEMA. The answer comes in columns per group and topic
    (ClusterAdmin.committed_offsets_by_topic), so the work here is per topic, not per commit."""
    index = _topic_index(topics)
    gids: list[int] = []
    tids: list[int] = []
    tps: list[int] = []
    offsets: list[int] = []
    first: list[bool] = []  # one row per (group, topic) says the group reads the topic
    with ClusterAdmin(connection, request_timeout=60.0) as admin:
        found = admin.committed_offsets_by_topic(groups)
    for gid, group in enumerate(groups, start=first_gid):
        committed = found[group]
        if isinstance(committed, KafkaFailure):
            raise CommitsReadError(f"cannot read the committed offsets of group {group}: {committed}")
        for t in committed:
            topic = index.get(t.topic)
            if topic is None:
                continue  # a topic the policy does not match
            n = len(t.partitions)
            if n == 0:
                continue
            if topic.listed is None and max(t.partitions) < topic.size:
                tps.extend([topic.first_tp + p for p in t.partitions])
                offsets.extend(t.offsets)
            else:
                n, grew = 0, False
                for p, o in zip(t.partitions, t.offsets, strict=True):
                    tp = topic.tp(p)
                    if tp is None:
                        grew = True  # the topic grew since the snapshot
                        continue
                    tps.append(tp)
                    offsets.append(o)
                    n += 1
                if grew:  # one row says so
                    tps.append(unlisted_partition(topic.tid))
                    offsets.append(-1)
                    n += 1
            gids.extend([gid] * n)
            tids.extend([topic.tid] * n)
            first.append(True)
            first.extend([False] * (n - 1))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(gids, pa.int32()),
            pa.array(tids, pa.int32()),
            pa.array(tps, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(first, pa.bool_()),
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
