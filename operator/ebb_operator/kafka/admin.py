"""The one client of Kafka-protocol clusters: every call the operator makes goes through `ClusterAdmin`.

It wraps kafka-python 3's KafkaAdminClient, the operator's only Kafka client library: it has every call
the operator needs, DescribeLogDirs and OffsetFetch for many groups in one request (KIP-709) among them,
which librdkafka's admin API lacks (docs/operator.md). Calls block: async callers run them in a thread
(`pool.AdminPool` keeps one instance per cluster and serialises calls on it).

Batched calls return a result or a failure per item and never raise for one bad partition: kafka-python
raises for the first error of a batch, so a failed batch is retried item by item to attribute each
failure (safe for every call here: reads are reads, and DeleteRecords is idempotent, KIP-107).
DeleteRecords is sent by this module itself, one request per leader (see `delete_records`).
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kafka import TopicPartition as KpTopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, OffsetSpec
from kafka.errors import (
    KafkaError,
    LeaderNotAvailableError,
    UnknownBrokerIdError,
    UnknownTopicOrPartitionError,
    for_code,
)
from kafka.protocol.admin import AlterClientQuotasRequest, DeleteRecordsRequest, DescribeClientQuotasRequest

from ebb_operator.kafka import client_internals, offset_fetch, record_times, share_group_offsets
from ebb_operator.kafka.connection import ClusterConnection
from ebb_operator.kafka.offset_fetch import TopicCommits
from ebb_operator.kafka.results import (
    ClusterMetadata,
    ConfigValue,
    DeleteRecordsResult,
    GroupDescription,
    GroupListing,
    GroupMember,
    KafkaCallError,
    KafkaFailure,
    OffsetResult,
    QuotaEntity,
    TopicConfigs,
    TopicMetadata,
    TopicPartition,
)

log = logging.getLogger(__name__)

EARLIEST = "earliest"
LATEST = "latest"

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")


# Not a Kafka error code: the leader is a broker the client has not met (it joined, or came back, after the
# client's last metadata); a fresh client bootstraps with it (AdminPool.reset).
UNKNOWN_BROKER = "UNKNOWN_BROKER_ID"


def failure_of(exc: BaseException) -> KafkaFailure:
    """A client exception as a KafkaFailure, keeping Kafka's error name and retriability."""
    if isinstance(exc, UnknownBrokerIdError):
        # kafka-python's answer for a request to a partition's leader when metadata names none (-1: an
        # election under way, its only replica's broker down) or names a broker it has not met yet: a state
        # the next metadata refresh may end, as Kafka's LEADER_NOT_AVAILABLE says.
        who = exc.args[0] if exc.args else None
        if who == -1:
            return KafkaFailure("LEADER_NOT_AVAILABLE", "the partition has no leader", True)
        return KafkaFailure(UNKNOWN_BROKER, f"broker {who} is not in the client's metadata", True)
    if isinstance(exc, KafkaError):
        code = getattr(exc, "message", None) or type(exc).__name__
        text = str(exc.args[0]) if exc.args else str(code)
        return KafkaFailure(str(code), text, bool(getattr(exc, "retriable", False)))
    return KafkaFailure(type(exc).__name__, str(exc), False)


def per_item(
    keys: list[K],
    call: Callable[[list[K]], Mapping[K, V]],
    wrap: Callable[[V], R],
    failed: Callable[[K, KafkaFailure], R],
) -> dict[K, R]:
    """`call` on all keys at once; when it raises, on each key alone so each failure lands on its item."""
    try:
        found = call(keys)
        return {k: wrap(found[k]) if k in found else failed(k, _missing()) for k in keys}
    except Exception as exc:
        if len(keys) == 1:
            return {keys[0]: failed(keys[0], failure_of(exc))}
    out: dict[K, R] = {}
    for k in keys:
        out.update(per_item([k], call, wrap, failed))
    return out


def _missing_topic() -> KafkaFailure:
    return KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", "topic does not exist", False)


def _missing() -> KafkaFailure:
    return KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", "no answer for this partition", False)


def _kp(tp: TopicPartition) -> KpTopicPartition:
    return KpTopicPartition(tp.topic, tp.partition)


def _tp(kp: KpTopicPartition) -> TopicPartition:
    return TopicPartition(kp.topic, kp.partition)


class ClusterAdmin:
    """Admin operations on one cluster. Close it (or use `with`) to release its connections."""

    def __init__(self, connection: ClusterConnection, *, request_timeout: float = 15.0) -> None:
        self.connection = connection
        self.timeout = request_timeout
        self._client = KafkaAdminClient(
            **connection.client_config(), request_timeout_ms=int(request_timeout * 1000)
        )

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    # -- cluster and topics ---------------------------------------------------------------------

    def cluster_id(self) -> str:
        """DescribeCluster's cluster id: a cluster's identity, whatever bootstrap string names it."""
        return str(self._client.describe_cluster()["cluster_id"])

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Brokers and topics (all topics, or the ones named; internal topics left out)."""
        found = self.topics(topics)
        cluster = self._client.describe_cluster()
        brokers = tuple(sorted(b["broker_id"] for b in cluster["brokers"]))
        return ClusterMetadata(brokers, found)

    def topics(self, topics: Iterable[str] | None = None) -> dict[str, TopicMetadata]:
        """Topics and their partitions (all topics, or the ones named, a missing one with its failure;
        internal topics left out): one Metadata request."""
        wanted = sorted(set(topics)) if topics is not None else None
        described = self._client.describe_topics(wanted) if wanted != [] else []
        out: dict[str, TopicMetadata] = {}
        for t in described:
            name = t["name"]
            if t.get("is_internal") or name.startswith("__"):
                continue
            error = _code_failure(t["error_code"]) if t.get("error_code") else None
            parts = tuple(sorted(p["partition_index"] for p in t.get("partitions") or []))
            out[name] = TopicMetadata(name, () if error else parts, error)
        for name in set(wanted or ()) - out.keys():
            out[name] = TopicMetadata(name, (), _missing_topic())
        return out

    def offsets(
        self, partitions: Iterable[TopicPartition], at: str | int
    ) -> dict[TopicPartition, OffsetResult]:
        """ListOffsets: `earliest` (log start), `latest` (high watermark) or a timestamp in ms
        (-1 when no record is that recent)."""
        spec: Any = OffsetSpec.EARLIEST if at == EARLIEST else OffsetSpec.LATEST if at == LATEST else int(at)
        tps = list(dict.fromkeys(partitions))
        if not tps:
            return {}

        def call(keys: list[TopicPartition]) -> dict[TopicPartition, Any]:
            found = self._client.list_partition_offsets({_kp(tp): spec for tp in keys})
            return {_tp(kp): o.offset for kp, o in found.items()}

        return per_item(tps, call, lambda o: OffsetResult(int(o)), lambda _, f: OffsetResult(None, f))

    # -- consumer groups ------------------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        return [
            GroupListing(g["group_id"], group_state(g.get("group_state")), g.get("group_type") or "classic")
            for g in self._client.list_groups()
        ]

    def share_group_offsets(
        self, group_ids: Iterable[str]
    ) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
        """The start offsets of share groups (DescribeShareGroupOffsets, KIP-932) on every partition they
        have state for; -1 where one has no offset yet. Not on chosen partitions: asked for one, Kafka
        answers -1 whether the group reads it or not. Any other group id has none, as has every group of a
        cluster without the API (it has no share groups)."""
        ids = list(dict.fromkeys(group_ids))
        if not ids or not share_group_offsets.supported(self._client):
            return {g: {} for g in ids}
        try:
            return share_group_offsets.fetch(self._client, ids)
        except KafkaError as exc:  # the coordinators not found (a new cluster creating __consumer_offsets)
            return dict.fromkeys(ids, failure_of(exc))

    def describe_groups(
        self, group_ids: Iterable[str], answered: dict[str, Any] | BaseException | None = None
    ) -> dict[str, GroupDescription]:
        """DescribeGroups; `answered` is kafka-python's answer for all of `group_ids` when it was already
        asked (its failure: each group is then asked alone)."""
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}

        def call(keys: list[str]) -> dict[str, Any]:
            if keys is ids and answered is not None:
                if isinstance(answered, BaseException):
                    raise answered
                return answered
            return dict(self._client.describe_groups(keys))

        return per_item(ids, call, _group_description, lambda gid, f: GroupDescription(gid, "UNKNOWN", (), f))

    def readers(
        self, group_ids: Iterable[str], topics: Iterable[str]
    ) -> tuple[dict[str, GroupDescription], dict[str, list[TopicCommits] | KafkaFailure]]:
        """What the Consumed guard reads of each group: its description (members and their assignments)
        and its commits on every partition of `topics`, and on nothing else, so the answer is bounded by
        the topics checked rather than by everything the groups committed. Every partition, not only
        those cut: a commit on any partition of a topic is what says that a group reads it.

        DescribeGroups and OffsetFetch go out at once, as neither answer depends on the other; the commits
        come in OffsetFetch v8 requests of many groups. A topic whose partitions cannot be listed fails
        the call (fail closed), except a topic that no longer exists: nothing of it can be deleted."""
        ids = list(dict.fromkeys(group_ids))
        wanted: dict[str, list[int]] = {}
        for name, found in self.topics(topics).items():
            if found.error is None:
                wanted[name] = list(found.partitions)
            elif found.error.code != _missing_topic().code:
                raise KafkaCallError(found.error)
        if not offset_fetch.supported(self._client):
            commits = {
                g: found if isinstance(found, KafkaFailure) else offset_fetch.commits_on(found, wanted)
                for g, found in self.committed_offsets_by_topic(ids).items()
            }
            return self.describe_groups(ids), commits
        if not ids or not wanted:
            return self.describe_groups(ids), {g: [] for g in ids}
        # DescribeGroups in flight while the commits are fetched: kafka-python's blocking calls may run
        # from several threads at once, each awaiting its answer on the client's I/O thread.
        with ThreadPoolExecutor(1, thread_name_prefix="describe-groups") as pool:
            described = pool.submit(self._client.describe_groups, ids)
            commits = offset_fetch.fetch(self._client, ids, wanted)
            try:
                answered: dict[str, Any] | BaseException = dict(described.result())
            except Exception as exc:  # described again group by group, each failure on its group
                answered = exc
        return self.describe_groups(ids, answered), commits

    def share_group_readers(
        self, group_ids: Iterable[str], topics: Iterable[str]
    ) -> dict[str, list[TopicCommits] | KafkaFailure]:
        """`readers`' commits for share groups: their start offsets on `topics`, in the same columns."""
        wanted = list(topics)
        return {
            g: found if isinstance(found, KafkaFailure) else share_group_offsets.as_commits(found, wanted)
            for g, found in self.share_group_offsets(group_ids).items()
        }

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (OffsetFetch); partitions without a commit are left out."""
        result = self.committed_offsets_of([group_id])[group_id]
        if isinstance(result, KafkaFailure):
            raise KafkaCallError(result)
        return result

    def committed_offsets_of(
        self, group_ids: Iterable[str]
    ) -> dict[str, dict[TopicPartition, int] | KafkaFailure]:
        """Committed offsets of many groups, in one OffsetFetch per coordinator where the broker serves
        v8+ (KIP-709), else one per group; a group that cannot be read gets its failure."""
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}

        def call(keys: list[str]) -> dict[str, Any]:
            return dict(self._client.list_group_offsets(keys))

        def wrap(found: Mapping[KpTopicPartition, Any]) -> dict[TopicPartition, int]:
            # kafka-python's TopicPartition is a (topic, partition) named tuple too: re-typed, not rebuilt
            # (a large group answers with 10 000s of partitions, and the analysis job reads 10 M).
            new = tuple.__new__
            return {new(TopicPartition, kp): o.offset for kp, o in found.items() if o.offset >= 0}

        return per_item(ids, call, wrap, lambda _, f: f)

    def committed_offsets_by_topic(
        self, group_ids: Iterable[str]
    ) -> dict[str, list[TopicCommits] | KafkaFailure]:
        """Every committed offset of many groups, per topic, in columns: the analysis job's read of 10 M
        commits (offset_fetch.py decodes the v8 answer itself; without v8, the per-group path above)."""
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}
        if offset_fetch.supported(self._client):
            return offset_fetch.fetch(self._client, ids)
        out: dict[str, list[TopicCommits] | KafkaFailure] = {}
        for group, found in self.committed_offsets_of(ids).items():
            if isinstance(found, KafkaFailure):
                out[group] = found
                continue
            by_topic: dict[str, TopicCommits] = {}
            for tp, offset in sorted(found.items()):
                t = by_topic.setdefault(tp.topic, TopicCommits(tp.topic, [], []))
                t.partitions.append(tp.partition)
                t.offsets.append(offset)
            out[group] = list(by_topic.values())
        return out

    # -- configs --------------------------------------------------------------------------------

    def topic_configs(self, topics: Iterable[str]) -> dict[str, TopicConfigs]:
        names = list(dict.fromkeys(topics))
        if not names:
            return {}

        def call(keys: list[str]) -> dict[str, Any]:
            resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in keys]
            return dict(self._client.describe_configs(resources, config_filter="all").get("topic", {}))

        def wrap(entries: Mapping[str, Any]) -> TopicConfigs:
            if not entries:  # every topic has configs: none at all is how a missing topic answers
                return TopicConfigs({}, _missing_topic())
            return TopicConfigs(
                {
                    name: ConfigValue(
                        e["value"], str(e["config_source"]), e["config_source"] == "DEFAULT_CONFIG"
                    )
                    for name, e in entries.items()
                }
            )

        return per_item(names, call, wrap, lambda _, f: TopicConfigs({}, f))

    def set_topic_configs(self, changes: Mapping[str, Mapping[str, str]]) -> dict[str, KafkaFailure | None]:
        """IncrementalAlterConfigs SET of the given keys per topic; other keys stay as they are."""
        wanted = {t: dict(c) for t, c in changes.items() if c}
        if not wanted:
            return {}

        def call(keys: list[str]) -> dict[str, Any]:
            resources = [
                ConfigResource(
                    ConfigResourceType.TOPIC, t, configs={k: ("SET", v) for k, v in wanted[t].items()}
                )
                for t in keys
            ]
            answer = self._client.alter_configs(resources, incremental=True, raise_on_unknown=False)
            out: dict[str, None] = {}
            for topic, result in dict(answer.get("topic", {})).items():
                if isinstance(result, BaseException):
                    raise result
                out[topic] = None
            return out

        return per_item(list(wanted), call, lambda _ok: None, lambda _, f: f)

    # -- client quotas (KIP-546) -----------------------------------------------------------------

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every client quota of the cluster (DescribeClientQuotas with an empty filter): entity -> key
        (`producer_byte_rate`, ...) -> value. Raises KafkaCallError when the cluster refuses."""
        client = self._client

        async def run() -> Any:
            return await client_internals.send(
                client, DescribeClientQuotasRequest(components=[], strict=False)
            )

        try:
            response = client_internals.run(client, run)
        except Exception as exc:
            raise KafkaCallError(failure_of(exc)) from exc
        return described_quotas(response)

    def alter_client_quotas(
        self, changes: Mapping[QuotaEntity, Mapping[str, float | None]], *, validate_only: bool = False
    ) -> dict[QuotaEntity, KafkaFailure | None]:
        """AlterClientQuotas: per entity, set each key to its value or remove it (None); keys not named
        stay. One request; each entity's outcome its own (a refused entity changes nothing of itself)."""
        wanted = {e: dict(c) for e, c in changes.items() if c}
        if not wanted:
            return {}
        client = self._client
        request = alter_quotas_request(wanted, validate_only)

        async def run() -> Any:
            return await client_internals.send(client, request)

        try:
            response = client_internals.run(client, run)
        except Exception as exc:  # no answer: every entity failed alike
            return dict.fromkeys(wanted, failure_of(exc))
        return altered_quotas(response, wanted)

    # -- sizes and deletion ---------------------------------------------------------------------

    def log_dir_sizes(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Bytes on disk per partition, summed over every replica (DescribeLogDirs to every broker)."""
        return {tp: sum(sizes) for tp, sizes in self.log_dir_replica_sizes(partitions).items()}

    def log_dir_replica_sizes(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, list[int]]:
        """Bytes on disk of each replica of each partition (DescribeLogDirs to every broker; a replica per
        log dir that holds the partition, in the brokers' answer order)."""
        wanted: dict[str, list[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        if not wanted:
            return {}
        sizes: dict[TopicPartition, list[int]] = {}
        for broker in self._client.describe_log_dirs(topic_partitions=wanted):
            for log_dir in broker["log_dirs"]:
                if log_dir.get("error_code", 0):
                    continue
                for topic in log_dir.get("topics", []):
                    for part in topic.get("partitions", []):
                        tp = TopicPartition(topic["name"], part["partition_index"])
                        if tp.partition in wanted.get(tp.topic, ()):
                            sizes.setdefault(tp, []).append(int(part["partition_size"]))
        return sizes

    def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, DeleteRecordsResult]:
        """KIP-107 DeleteRecords: move each partition's log start to `offset` (-1 = high watermark).

        One request per leader, all in flight at once, each partition's error its own. Not kafka-python's
        `delete_records`: it awaits the leaders one after another and raises for the whole batch when
        one partition fails, and a leader's answer waits for every live replica (up to the request's
        timeout), so a follower that does not fetch would cost that timeout per leader, then again per
        partition when the batch is split. The broker is asked to answer within two thirds of the
        client's request timeout, so its per-partition REQUEST_TIMED_OUT arrives before the client
        gives up on the connection."""
        if not offsets:
            return {}
        wait_ms = int(self.timeout * 1000 * 2 / 3)
        client = self._client
        out: dict[TopicPartition, DeleteRecordsResult] = {}

        async def run(leaders: Mapping[int, list[TopicPartition]]) -> None:
            in_flight = []
            for leader, parts in leaders.items():
                by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
                for tp in sorted(parts):
                    by_topic[tp.topic].append((tp.partition, offsets[tp]))
                request = DeleteRecordsRequest(topics=list(by_topic.items()), timeout_ms=wait_ms)
                in_flight.append((parts, client_internals.send(client, request, leader)))
            for parts, future in in_flight:
                try:
                    response = (await future).to_dict()
                except Exception as exc:  # the leader did not answer: every partition it leads failed
                    for tp in parts:
                        out[tp] = DeleteRecordsResult(None, failure_of(exc))
                    continue
                for topic in response["topics"]:
                    for p in topic["partitions"]:
                        tp = TopicPartition(topic["name"], p["partition_index"])
                        if p["error_code"]:
                            error = for_code(p["error_code"])(f"deleting records of {tp}")
                            out[tp] = DeleteRecordsResult(None, failure_of(error))
                        else:
                            out[tp] = DeleteRecordsResult(int(p["low_watermark"]))

        try:
            leaders: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp, leader in self._leaders(offsets).items():
                if isinstance(leader, KafkaFailure):
                    out[tp] = DeleteRecordsResult(None, leader)
                else:
                    leaders[leader].append(tp)
            client_internals.run(client, run, leaders)
        except Exception as exc:  # the cluster did not answer: each partition is asked alone, for its own
            if len(offsets) == 1:
                ((tp, _),) = offsets.items()
                return {tp: DeleteRecordsResult(None, failure_of(exc))}
            out = {}
            for tp, offset in offsets.items():
                out.update(self.delete_records({tp: offset}))
            return out
        return {tp: out.get(tp, DeleteRecordsResult(None, _missing())) for tp in offsets}

    def record_timestamps(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The timestamp (ms) of the record at each partition's offset, read with Fetch from its leader
        (`record_times.py`); a partition whose record could not be read (no leader, an error, no record
        there any more) is left out: its age is unknown, nothing else."""
        wanted = dict(positions)
        if not wanted:
            return {}
        client = self._client
        found: dict[TopicPartition, int | KafkaFailure | None] = {}

        async def ask(groups: list[tuple[int, list[tuple[TopicPartition, int]]]]) -> None:
            waiting: deque[Any] = deque()
            for leader, batch in groups:
                if len(waiting) >= offset_fetch.IN_FLIGHT:
                    await fetched(*waiting.popleft())
                waiting.append((batch, client_internals.send(client, record_times.request(batch), leader)))
            while waiting:
                await fetched(*waiting.popleft())

        async def fetched(batch: list[tuple[TopicPartition, int]], future: Any) -> None:
            try:
                found.update(record_times.timestamps(await future, dict(batch)))
            except Exception as exc:
                found.update(dict.fromkeys((tp for tp, _ in batch), failure_of(exc)))

        leaders = {tp: leader for tp, leader in self._leaders(wanted).items() if isinstance(leader, int)}
        by_leader: dict[int, list[tuple[TopicPartition, int]]] = defaultdict(list)
        for tp, leader in leaders.items():
            by_leader[leader].append((tp, wanted[tp]))
        first = [(n, b) for n, parts in by_leader.items() for b in record_times.batches(parts)]
        client_internals.run(client, ask, first)
        # A batch larger than the per-partition limit came back cut short: alone, it comes whole (KIP-74).
        alone = [(leaders[tp], [(tp, wanted[tp])]) for tp in sorted(leaders) if found.get(tp, 0) is None]
        if alone:
            client_internals.run(client, ask, alone)
        return {tp: t for tp, t in found.items() if isinstance(t, int)}

    def _leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | KafkaFailure]:
        """Each partition's leader (one Metadata request), or why it has none to ask."""
        wanted = set(partitions)
        leaders: dict[TopicPartition, int | KafkaFailure] = {}
        for t in self._client.describe_topics(sorted({tp.topic for tp in wanted})):
            for p in t.get("partitions") or []:
                tp = TopicPartition(t["name"], p["partition_index"])
                if tp in wanted:
                    leader = p["leader_id"]
                    no_leader = leader is None or leader < 0
                    leaders[tp] = failure_of(LeaderNotAvailableError()) if no_leader else int(leader)
        for tp in wanted - leaders.keys():
            leaders[tp] = failure_of(UnknownTopicOrPartitionError(f"{tp} is not in the cluster's metadata"))
        return leaders


def _group_description(raw: Mapping[str, Any]) -> GroupDescription:
    members = tuple(
        GroupMember(
            m["member_id"],
            m.get("client_id") or "",
            m.get("client_host") or "",
            tuple(
                TopicPartition(a["topic"], p)
                for a in ((m.get("member_assignment") or {}).get("assigned_partitions") or [])
                for p in a["partitions"]
            ),
            tuple((m.get("member_metadata") or {}).get("topics") or ()),
        )
        for m in raw.get("members") or []
    )
    error = raw.get("error")
    failure = failure_of(error) if isinstance(error, BaseException) else None
    return GroupDescription(raw["group_id"], group_state(raw.get("group_state")), members, failure)


def group_state(text: object) -> str:
    """Kafka's group state names (Stable, CompletingRebalance) as constants: STABLE, COMPLETING_REBALANCE."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", str(text or "Unknown")).upper()


def _code_failure(code: int, message: str | None = None) -> KafkaFailure:
    """A Kafka error code as a KafkaFailure; the broker's own message when it sent one."""
    cls = for_code(code)
    return KafkaFailure(str(cls.message), message or str(cls.description or cls.message), bool(cls.retriable))


def _entity(parts: Iterable[Any]) -> QuotaEntity:
    return QuotaEntity(tuple(sorted((p.entity_type, p.entity_name) for p in parts)))


def described_quotas(response: Any) -> dict[QuotaEntity, dict[str, float]]:
    """A DescribeClientQuotas answer as entity -> key -> value; KafkaCallError for a refused filter."""
    if response.error_code:
        raise KafkaCallError(_code_failure(response.error_code, response.error_message))
    return {_entity(e.entity): {v.key: float(v.value) for v in e.values} for e in response.entries or []}


def alter_quotas_request(
    wanted: Mapping[QuotaEntity, Mapping[str, float | None]], validate_only: bool
) -> AlterClientQuotasRequest:
    """One AlterClientQuotas for every entity's ops (a None value removes the key)."""
    return AlterClientQuotasRequest(
        entries=[
            (list(entity.parts), [(k, 0.0 if v is None else float(v), v is None) for k, v in ops.items()])
            for entity, ops in wanted.items()
        ],
        validate_only=validate_only,
    )


def altered_quotas(response: Any, wanted: Iterable[QuotaEntity]) -> dict[QuotaEntity, KafkaFailure | None]:
    """Each entity's outcome in an AlterClientQuotas answer (an entity left unanswered failed)."""
    out = {
        _entity(e.entity): _code_failure(e.error_code, e.error_message) if e.error_code else None
        for e in response.entries
    }
    unanswered = KafkaFailure("UNKNOWN_SERVER_ERROR", "no answer for this quota entity", False)
    return {e: out.get(e, unanswered) for e in wanted}
