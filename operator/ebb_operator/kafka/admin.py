"""The one client of Kafka-protocol clusters: every call the operator makes goes through `ClusterAdmin`.

confluent-kafka's AdminClient (librdkafka) does nearly everything; DescribeLogDirs, which it lacks, goes
through kafka-python's admin client. Calls block (they wait on client futures): async callers run them
in a thread. Batched calls return a result or failure per item and never raise for one bad partition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)
from kafka.admin import KafkaAdminClient

from ebb_operator.kafka.connection import ClusterConnection
from ebb_operator.kafka.results import (
    ClusterMetadata,
    ConfigValue,
    DeleteRecordsResult,
    GroupDescription,
    GroupListing,
    GroupMember,
    KafkaFailure,
    OffsetResult,
    TopicConfigs,
    TopicMetadata,
    TopicPartition,
)

log = logging.getLogger(__name__)

EARLIEST = "earliest"
LATEST = "latest"


def failure_of(exc: BaseException) -> KafkaFailure:
    """A client exception as a KafkaFailure, keeping Kafka's error name and retriability."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError):
        return KafkaFailure(err.name(), err.str(), bool(err.retriable()))
    return KafkaFailure(type(exc).__name__, str(exc), False)


def _failure_of_error(err: KafkaError | None) -> KafkaFailure | None:
    if err is None or err.code() == KafkaError.NO_ERROR:
        return None
    return KafkaFailure(err.name(), err.str(), bool(err.retriable()))


def _ck(tp: TopicPartition, offset: int = -1001) -> CkTopicPartition:
    return CkTopicPartition(tp.topic, tp.partition, offset)


class ClusterAdmin:
    """Admin operations on one cluster. Close it (or use `with`) to release the client threads."""

    def __init__(self, connection: ClusterConnection, *, request_timeout: float = 15.0) -> None:
        self.connection = connection
        self.timeout = request_timeout
        self._admin = AdminClient(connection.librdkafka_config())
        self._legacy: KafkaAdminClient | None = None

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._legacy is not None:
            self._legacy.close()
            self._legacy = None

    def _wait(self, future: Future[Any]) -> Any:
        return future.result(timeout=self.timeout + 5)

    # -- metadata and offsets -------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Brokers and topics (all topics, or the ones named; internal topics left out)."""
        md = self._admin.list_topics(timeout=self.timeout)
        wanted = set(topics) if topics is not None else None
        out: dict[str, TopicMetadata] = {}
        for name, topic in md.topics.items():
            if name.startswith("__") or (wanted is not None and name not in wanted):
                continue
            out[name] = TopicMetadata(name, tuple(sorted(topic.partitions)), _failure_of_error(topic.error))
        for name in (wanted or set()) - out.keys():
            out[name] = TopicMetadata(
                name, (), KafkaFailure("UNKNOWN_TOPIC_OR_PART", "topic does not exist", False)
            )
        return ClusterMetadata(tuple(sorted(md.brokers)), out)

    def offsets(
        self, partitions: Iterable[TopicPartition], at: str | int
    ) -> dict[TopicPartition, OffsetResult]:
        """ListOffsets: `earliest` (log start), `latest` (high watermark) or a timestamp in ms."""
        spec = (
            OffsetSpec.earliest()
            if at == EARLIEST
            else OffsetSpec.latest()
            if at == LATEST
            else OffsetSpec.for_timestamp(int(at))
        )
        request = {_ck(tp): spec for tp in partitions}
        if not request:
            return {}
        futures = self._admin.list_offsets(request, request_timeout=self.timeout)
        out: dict[TopicPartition, OffsetResult] = {}
        for ck, future in futures.items():
            tp = TopicPartition(ck.topic, ck.partition)
            try:
                out[tp] = OffsetResult(self._wait(future).offset)
            except Exception as exc:
                out[tp] = OffsetResult(None, failure_of(exc))
        return out

    # -- consumer groups ------------------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        result = self._wait(self._admin.list_consumer_groups(request_timeout=self.timeout))
        if result.errors:
            raise KafkaException(result.errors[0])
        return [
            GroupListing(g.group_id, g.state.name if g.state is not None else "UNKNOWN") for g in result.valid
        ]

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        ids = list(group_ids)
        if not ids:
            return {}
        futures = self._admin.describe_consumer_groups(ids, request_timeout=self.timeout)
        out: dict[str, GroupDescription] = {}
        for gid, future in futures.items():
            try:
                desc = self._wait(future)
            except Exception as exc:
                out[gid] = GroupDescription(gid, "UNKNOWN", (), failure_of(exc))
                continue
            members = tuple(
                GroupMember(
                    m.member_id,
                    m.client_id,
                    m.host,
                    tuple(
                        TopicPartition(tp.topic, tp.partition)
                        for tp in (m.assignment.topic_partitions if m.assignment else [])
                    ),
                )
                for m in desc.members
            )
            out[gid] = GroupDescription(gid, desc.state.name, members)
        return out

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (OffsetFetch); partitions without a commit are left out."""
        request = [ConsumerGroupTopicPartitions(group_id)]
        futures = self._admin.list_consumer_group_offsets(request, request_timeout=self.timeout)
        result = self._wait(futures[group_id])
        out: dict[TopicPartition, int] = {}
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset >= 0:
                out[TopicPartition(tp.topic, tp.partition)] = tp.offset
        return out

    # -- configs --------------------------------------------------------------------------------

    def topic_configs(self, topics: Iterable[str]) -> dict[str, TopicConfigs]:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        futures = self._admin.describe_configs(resources, request_timeout=self.timeout)
        out: dict[str, TopicConfigs] = {}
        for resource, future in futures.items():
            try:
                entries = self._wait(future)
            except Exception as exc:
                out[resource.name] = TopicConfigs({}, failure_of(exc))
                continue
            out[resource.name] = TopicConfigs(
                {
                    name: ConfigValue(
                        e.value,
                        ConfigSource(e.source).name,
                        bool(e.is_default),
                    )
                    for name, e in entries.items()
                }
            )
        return out

    def set_topic_configs(self, changes: Mapping[str, Mapping[str, str]]) -> dict[str, KafkaFailure | None]:
        """IncrementalAlterConfigs SET of the given keys per topic; other keys stay as they are."""
        resources = [
            ConfigResource(
                ResourceType.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
                ],
            )
            for topic, configs in changes.items()
            if configs
        ]
        if not resources:
            return {}
        futures = self._admin.incremental_alter_configs(resources, request_timeout=self.timeout)
        out: dict[str, KafkaFailure | None] = {}
        for resource, future in futures.items():
            try:
                self._wait(future)
                out[resource.name] = None
            except Exception as exc:
                out[resource.name] = failure_of(exc)
        return out

    # -- sizes and deletion ---------------------------------------------------------------------

    def log_dir_sizes(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Bytes on disk per partition, summed over every replica (DescribeLogDirs to every broker)."""
        wanted: dict[str, list[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        if not wanted:
            return {}
        if self._legacy is None:
            self._legacy = KafkaAdminClient(
                **self.connection.kafka_python_config(), request_timeout_ms=int(self.timeout * 1000)
            )
        sizes: dict[TopicPartition, int] = {}
        for broker in self._legacy.describe_log_dirs(topic_partitions=wanted):
            for log_dir in broker["log_dirs"]:
                if log_dir.get("error_code", 0):
                    continue
                for topic in log_dir.get("topics", []):
                    for part in topic.get("partitions", []):
                        tp = TopicPartition(topic["name"], part["partition_index"])
                        if tp.partition in wanted.get(tp.topic, ()):
                            sizes[tp] = sizes.get(tp, 0) + int(part["partition_size"])
        return sizes

    def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, DeleteRecordsResult]:
        """KIP-107 DeleteRecords: move each partition's log start to `offset` (-1 = high watermark)."""
        if not offsets:
            return {}
        request = [_ck(tp, offset) for tp, offset in offsets.items()]
        futures = self._admin.delete_records(
            request, request_timeout=self.timeout, operation_timeout=self.timeout
        )
        out: dict[TopicPartition, DeleteRecordsResult] = {}
        for ck, future in futures.items():
            tp = TopicPartition(ck.topic, ck.partition)
            try:
                out[tp] = DeleteRecordsResult(self._wait(future).low_watermark)
            except Exception as exc:
                out[tp] = DeleteRecordsResult(None, failure_of(exc))
        return out
