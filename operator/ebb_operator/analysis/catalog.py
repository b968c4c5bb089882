"""A run's dense integer ids: commits reach Spark as (group id, partition id) pairs, never as names.

Hashing and copying a group name and a topic name per commit was most of the plan's cost; four fixed-width
columns are what the hot aggregation can go through quickly. The ids are fixed before any commit is read
(from the snapshot and the policy's classification of the groups), so the Admin-API reader emits them
directly; `encode` maps named commits (the `__consumer_offsets` source, tests) onto the same ids. Names
come back only for the few groups the plan names.

Group ids follow the groups' roles: the counted groups first (`gid < counted`, which is how the hot path
tells a counted commit without a join), then the groups outside `include` that an `exclusive` policy must
see; other groups get no id and their commits are not read. Topic ids follow the matched topics in name
order, and partition ids the topics, a topic's partitions consecutive in partition order.

The commits frame (COMMITS_SCHEMA), one row per committed offset of a group with an id on a matched topic:
  gid             the group
  tid             the topic
  tp              the partition; -(tid + 1) for a partition the snapshot does not list (it appeared since)
  committed_offset
  first_of_topic  true on exactly one row per (gid, tid): the group reads the topic. This is how the plan
                  learns who reads which topic from a filtered read of the commits, not an aggregation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ebb_operator.analysis.snapshot import PartitionState, TopicState

COMMITS_SCHEMA = "gid int, tid int, tp int, committed_offset long, first_of_topic boolean"
COMMITS_ARROW_SCHEMA = pa.schema(
    [
        ("gid", pa.int32()),
        ("tid", pa.int32()),
        ("tp", pa.int32()),
        ("committed_offset", pa.int64()),
        ("first_of_topic", pa.bool_()),
    ]
)


def unlisted_partition(tid: int) -> int:
    """The partition id of a commit on a partition of topic `tid` the snapshot does not list."""
    return -(tid + 1)


def unlisted_topic(tp: int) -> int | None:
    """The topic of an `unlisted_partition` id; None for a partition the snapshot lists."""
    return -tp - 1 if tp < 0 else None


@dataclass(frozen=True)
class Catalog:
    groups: tuple[str, ...]  # gid -> name: the groups whose commits are read
    counted: int  # gids below this are counted
    topics: tuple[TopicState, ...]  # tid -> the matched topic
    partitions: tuple[PartitionState, ...]  # tp -> the partition
    first_tp: tuple[int, ...]  # tid -> its first partition's tp (its partitions are consecutive)
    tp_topic: tuple[int, ...] = field(repr=False)  # tp -> tid

    @classmethod
    def of(
        cls,
        groups: Sequence[str],
        counted: int,
        topics: Sequence[TopicState],
        partitions: Sequence[PartitionState],
    ) -> Catalog:
        """`topics` are the matched ones; `partitions` of other topics are left out."""
        ordered_topics = tuple(sorted(topics, key=lambda t: t.topic))
        tid_of = {t.topic: i for i, t in enumerate(ordered_topics)}
        ordered = tuple(
            sorted((p for p in partitions if p.topic in tid_of), key=lambda p: (tid_of[p.topic], p.partition))
        )
        first: list[int] = [len(ordered)] * len(ordered_topics)
        tp_topic = []
        for tp, p in enumerate(ordered):
            tid = tid_of[p.topic]
            first[tid] = min(first[tid], tp)
            tp_topic.append(tid)
        return cls(tuple(groups), counted, ordered_topics, ordered, tuple(first), tuple(tp_topic))

    def gid_bits(self) -> int:
        """Bits a counted group id needs (the plan packs it under an offset to find ties at the minimum)."""
        return max(1, (self.counted - 1).bit_length())

    def topic_partitions(self, tid: int) -> range:
        start = self.first_tp[tid]
        end = self.first_tp[tid + 1] if tid + 1 < len(self.topics) else len(self.partitions)
        return range(start, max(start, end))

    def reader_topics(self) -> dict[str, list[int]]:
        """For the Admin-API reader: topic -> [tid, first tp, partition numbers...]."""
        return {
            t.topic: [
                tid,
                self.first_tp[tid],
                *(self.partitions[tp].partition for tp in self.topic_partitions(tid)),
            ]
            for tid, t in enumerate(self.topics)
        }

    # -- Spark ----------------------------------------------------------------------------------

    def bounds(self, spark: SparkSession) -> DataFrame:
        """tp, log_start, high_watermark: what tells a committed offset in range, broadcast to the commits."""
        table = pa.table(
            {
                "tp": pa.array(range(len(self.partitions)), pa.int32()),
                "log_start": pa.array([p.log_start for p in self.partitions], pa.int64()),
                "high_watermark": pa.array([p.high_watermark for p in self.partitions], pa.int64()),
            }
        )
        return spark.createDataFrame(table)

    def encode(self, offsets: DataFrame) -> DataFrame:
        """Named commits (group, topic, partition, committed_offset, ...) as COMMITS_SCHEMA rows: commits of
        groups without an id or on topics the policy does not match are left out."""
        spark = offsets.sparkSession
        gids = spark.createDataFrame(
            pa.table(
                {
                    "group": pa.array(self.groups, pa.string()),
                    "gid": pa.array(range(len(self.groups)), pa.int32()),
                }
            )
        )
        tids = spark.createDataFrame(
            pa.table(
                {
                    "topic": pa.array([t.topic for t in self.topics], pa.string()),
                    "tid": pa.array(range(len(self.topics)), pa.int32()),
                }
            )
        )
        tps = spark.createDataFrame(
            pa.table(
                {
                    "topic": pa.array([p.topic for p in self.partitions], pa.string()),
                    "partition": pa.array([p.partition for p in self.partitions], pa.int32()),
                    "tp": pa.array(range(len(self.partitions)), pa.int32()),
                }
            )
        )
        known = (
            offsets.join(F.broadcast(gids), "group")
            .join(F.broadcast(tids), "topic")
            .join(F.broadcast(tps), ["topic", "partition"], "left")
        )
        first = F.row_number().over(Window.partitionBy("gid", "tid").orderBy("partition")) == 1
        return known.select(
            "gid",
            "tid",
            F.coalesce(F.col("tp"), -(F.col("tid") + 1)).cast("int").alias("tp"),
            "committed_offset",
            first.alias("first_of_topic"),
        )
