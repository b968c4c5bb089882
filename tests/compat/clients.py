"""The same operations through three real Kafka clients: confluent-kafka, kafka-python, aiokafka.

Each adapter uses only its library's public API, so a scenario written once against `Client`
checks what a user of that library relies on. Broker-side errors surface as `BrokerError`
carrying Kafka's error code, whatever exception type the library raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from harness.bounded import close_within, until

T = TypeVar("T")

OFFSET_OUT_OF_RANGE = 1
POLICY_VIOLATION = 44


class BrokerError(Exception):
    def __init__(self, code: int, message: str = ""):
        super().__init__(f"broker error {code}: {message}")
        self.code = code


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


class Member(Protocol):
    def poll(self) -> None: ...
    def assignment(self) -> set[int]: ...
    def close(self) -> None: ...


class Client(Protocol):
    name: str

    def create_topic(
        self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> None: ...
    def produce(
        self,
        topic: str,
        records: list[tuple[bytes | None, bytes | None]],
        *,
        partition: int = 0,
        compression: str = "none",
        headers: list[tuple[str, bytes]] | None = None,
    ) -> list[int]: ...
    def consume(
        self,
        topic: str,
        count: int,
        *,
        group: str | None = None,
        reset: str = "earliest",
        timeout: float = 30.0,
        produce_after_join: Any = None,
    ) -> list[Rec]: ...
    def fetch_at(self, topic: str, partition: int, offset: int) -> list[Rec]: ...
    def delete_records(self, topic: str, partition: int, offset: int) -> int: ...
    def earliest(self, topic: str, partition: int) -> int: ...
    def latest(self, topic: str, partition: int) -> int: ...
    def commit(self, group: str, topic: str, partition: int, offset: int) -> None: ...
    def committed(self, group: str, topic: str, partition: int) -> int | None: ...
    def describe_configs(self, topic: str) -> dict[str, str | None]: ...
    def alter_configs(self, topic: str, configs: dict[str, str]) -> None: ...
    def member(self, group: str, topic: str) -> Member: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Security:
    """How a client connects: Kafka's security.protocol, the SASL mechanism and user, the CA to trust and,
    for mTLS, a client certificate; translated into each library's own settings."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    def confluent(self) -> dict[str, Any]:
        out: dict[str, Any] = {"security.protocol": self.protocol}
        if self.mechanism:
            out.update(
                {
                    "sasl.mechanism": self.mechanism,
                    "sasl.username": self.username,
                    "sasl.password": self.password,
                }
            )
        if self.cafile:
            out["ssl.ca.location"] = self.cafile
        if self.certfile:
            out.update({"ssl.certificate.location": self.certfile, "ssl.key.location": self.keyfile})
        return out

    def _python_clients_sasl(self) -> dict[str, Any]:
        """kafka-python and aiokafka name the protocol and SASL settings alike."""
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.mechanism:
            out.update(
                {
                    "sasl_mechanism": self.mechanism,
                    "sasl_plain_username": self.username,
                    "sasl_plain_password": self.password,
                }
            )
        return out

    def kafka_python(self) -> dict[str, Any]:
        out = self._python_clients_sasl()
        if self.cafile:
            out.update({"ssl_cafile": self.cafile, "ssl_check_hostname": True})
        if self.certfile:
            out.update({"ssl_certfile": self.certfile, "ssl_keyfile": self.keyfile})
        return out

    def aiokafka(self) -> dict[str, Any]:
        out = self._python_clients_sasl()
        if self.cafile:
            from aiokafka.helpers import create_ssl_context

            out["ssl_context"] = create_ssl_context(
                cafile=self.cafile, certfile=self.certfile, keyfile=self.keyfile
            )
        return out

    def java_properties(self) -> str:
        """A --command-config / --producer.config file for Kafka's own tools."""
        lines = [f"security.protocol={self.protocol}"]
        if self.mechanism:
            module = "plain.PlainLoginModule" if self.mechanism == "PLAIN" else "scram.ScramLoginModule"
            lines += [
                f"sasl.mechanism={self.mechanism}",
                f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
                f'username="{self.username}" password="{self.password}";',
            ]
        if self.cafile:
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.cafile}"]
        if self.certfile:
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.certfile}"]
        return "\n".join(lines) + "\n"


PLAINTEXT = Security()


def polled(consumer: Any, seconds: float = 0.2) -> Any:
    """A confluent-kafka consumer after one poll: librdkafka completes its side of a rebalance (and runs
    its callbacks) inside poll, so a test waiting for an assignment polls while it asks."""
    consumer.poll(seconds)
    return consumer


def _read_up_to(what: str, step: Callable[[], bool], timeout: float) -> None:
    """Call ``step`` (one poll, keeping what it read) until it says it has enough or ``timeout`` passes:
    the caller compares what came with what it expected, so running out of time is not an error here."""
    with contextlib.suppress(TimeoutError):
        until(what, step, timeout, interval=0)


# ---------------------------------------------------------------------------------------------
# confluent-kafka (librdkafka)


class ConfluentClient:
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, security: Security = PLAINTEXT):
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.conf = {"bootstrap.servers": bootstrap, **security.confluent()}
        self.admin = AdminClient(dict(self.conf))

    def _consumer(self, group: str | None, reset: str) -> Any:
        from confluent_kafka import Consumer

        return Consumer(
            {
                **self.conf,
                "group.id": group or f"g-{uuid.uuid4().hex}",
                "auto.offset.reset": reset,
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )

    @staticmethod
    def _raise(err: Any) -> None:
        raise BrokerError(err.code(), err.str())

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import NewTopic

        fut = self.admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])[topic]
        fut.result(30)

    def produce(
        self,
        topic: str,
        records: list[tuple[bytes | None, bytes | None]],
        *,
        partition: int = 0,
        compression: str = "none",
        headers: list[tuple[str, bytes]] | None = None,
    ) -> list[int]:
        from confluent_kafka import Producer

        p = Producer(
            {
                **self.conf,
                "compression.type": compression,
                "linger.ms": 5,
                "acks": "all",
            }
        )
        offsets: list[int] = []
        errors: list[Any] = []

        def done(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                offsets.append(msg.offset())

        for key, value in records:
            p.produce(
                topic,
                value=value,
                key=key,
                partition=partition,
                headers=[(k, v) for k, v in headers] if headers else None,
                on_delivery=done,
            )
            p.poll(0)
        remaining = p.flush(30)
        if errors:
            self._raise(errors[0])
        assert remaining == 0, "messages still in flight after 30 s"
        return offsets

    def consume(
        self,
        topic: str,
        count: int,
        *,
        group: str | None = None,
        reset: str = "earliest",
        timeout: float = 30.0,
        produce_after_join: Any = None,
    ) -> list[Rec]:
        c = self._consumer(group, reset)
        out: list[Rec] = []
        joined = False
        polls_since_join = 0

        def on_assign(consumer: Any, partitions: Any) -> None:
            nonlocal joined
            joined = True

        try:
            c.subscribe([topic], on_assign=on_assign)

            def read() -> bool:
                nonlocal produce_after_join, polls_since_join
                msg = c.poll(0.2)
                # librdkafka resolves the "latest" position with ListOffsets after the assignment and
                # exposes no position before the first record: give it a few polls first.
                if joined and produce_after_join is not None:
                    polls_since_join += 1
                    if polls_since_join >= 10:
                        produce_after_join()
                        produce_after_join = None
                if msg is not None and msg.error():
                    self._raise(msg.error())
                if msg is not None:
                    out.append(
                        Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()))
                    )
                return len(out) >= count

            _read_up_to(f"{count} records of {topic}", read, timeout)
            return out
        finally:
            close_within(c)

    def fetch_at(self, topic: str, partition: int, offset: int) -> list[Rec]:
        from confluent_kafka import TopicPartition

        c = self._consumer(None, "error")
        try:
            c.assign([TopicPartition(topic, partition, offset)])
            out: list[Rec] = []

            def read() -> bool:
                msg = c.poll(0.2)
                if msg is not None and msg.error():
                    err = msg.error()
                    if "out of range" in err.str().lower():
                        raise BrokerError(OFFSET_OUT_OF_RANGE, err.str())
                    self._raise(err)
                if msg is not None:
                    out.append(Rec(msg.partition(), msg.offset(), msg.key(), msg.value()))
                return bool(out)

            _read_up_to(f"a record of {topic}-{partition} at {offset}", read, 20)
            return out
        finally:
            close_within(c)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        from confluent_kafka import KafkaException, TopicPartition

        futs = self.admin.delete_records([TopicPartition(topic, partition, offset)])
        try:
            result = next(iter(futs.values())).result(30)
        except KafkaException as exc:
            self._raise(exc.args[0])
        return int(result.low_watermark)

    def _list_offset(self, topic: str, partition: int, spec: Any) -> int:
        from confluent_kafka import TopicPartition

        futs = self.admin.list_offsets({TopicPartition(topic, partition): spec})
        return int(next(iter(futs.values())).result(30).offset)

    def earliest(self, topic: str, partition: int) -> int:
        from confluent_kafka.admin import OffsetSpec

        return self._list_offset(topic, partition, OffsetSpec.earliest())

    def latest(self, topic: str, partition: int) -> int:
        from confluent_kafka.admin import OffsetSpec

        return self._list_offset(topic, partition, OffsetSpec.latest())

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        from confluent_kafka import TopicPartition

        c = self._consumer(group, "earliest")
        try:
            c.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
        finally:
            close_within(c)

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])
        res = self.admin.list_consumer_group_offsets([req])[group].result(30)
        off = res.topic_partitions[0].offset
        return None if off < 0 else int(off)

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        res = ConfigResource(ResourceType.TOPIC, topic)
        entries = self.admin.describe_configs([res])[res].result(30)
        return {name: e.value for name, e in entries.items()}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        res = ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
            ],
        )
        try:
            self.admin.incremental_alter_configs([res])[res].result(30)
        except Exception as exc:
            err = exc.args[0] if exc.args else None
            if hasattr(err, "code"):
                self._raise(err)
            raise

    def member(self, group: str, topic: str) -> Member:
        c = self._consumer(group, "earliest")
        c.subscribe([topic])
        return _ConfluentMember(c)

    def close(self) -> None:
        pass


class _ConfluentMember:
    def __init__(self, consumer: Any):
        self.c = consumer

    def poll(self) -> None:
        self.c.poll(0.1)

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}

    def close(self) -> None:
        close_within(self.c)


# ---------------------------------------------------------------------------------------------
# kafka-python


class KafkaPythonClient:
    name = "kafka-python"

    def __init__(self, bootstrap: str, security: Security = PLAINTEXT):
        from kafka import KafkaAdminClient

        self.bootstrap = bootstrap
        self.sec = security.kafka_python()
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000, **self.sec)

    def _consumer(self, group: str | None, reset: str, **kw: Any) -> Any:
        from kafka import KafkaConsumer

        return KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=group,
            auto_offset_reset=reset,
            enable_auto_commit=False,
            # kafka-python heartbeats from a thread of its own; on a loaded 2-core machine it was starved
            # for over 10 s and the member expired while the test polled it (its LeaveGroup was answered
            # UNKNOWN_MEMBER_ID). A member that leaves still rebalances the group at once.
            session_timeout_ms=30000,
            heartbeat_interval_ms=500,
            metadata_max_age_ms=1000,
            **self.sec,
            **kw,
        )

    @staticmethod
    def _wrap(exc: Exception) -> BrokerError:
        code = getattr(exc, "errno", None)
        if code is None:
            raise exc
        return BrokerError(int(code), str(exc))

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        from kafka.admin import NewTopic

        self.admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])

    def produce(
        self,
        topic: str,
        records: list[tuple[bytes | None, bytes | None]],
        *,
        partition: int = 0,
        compression: str = "none",
        headers: list[tuple[str, bytes]] | None = None,
    ) -> list[int]:
        from kafka import KafkaProducer

        p = KafkaProducer(
            **self.sec,
            bootstrap_servers=self.bootstrap,
            linger_ms=5,
            acks="all",
            compression_type=None if compression == "none" else compression,
        )
        try:
            futures = [
                p.send(topic, value=v, key=k, partition=partition, headers=headers or []) for k, v in records
            ]
            p.flush(30)
            try:
                return [f.get(30).offset for f in futures]
            except Exception as exc:
                raise self._wrap(exc) from exc
        finally:
            p.close(5)

    def consume(
        self,
        topic: str,
        count: int,
        *,
        group: str | None = None,
        reset: str = "earliest",
        timeout: float = 30.0,
        produce_after_join: Any = None,
    ) -> list[Rec]:
        # kafka-python 3.0.12 intermittently stops heartbeating after its first rebalance (reproduced
        # against Apache Kafka 4.3.1 too, about 1 join in 8), so plain reads assign the partitions;
        # its group membership is exercised by the rebalance and commit scenarios.
        c = self._consumer(group, reset)
        out: list[Rec] = []
        try:
            partitions = _known_partitions(c, topic, timeout)
            if group is None:
                from kafka import TopicPartition

                c.assign([TopicPartition(topic, p) for p in sorted(partitions)])
            else:
                c.subscribe([topic])

            def read() -> bool:
                nonlocal produce_after_join, out
                batches = c.poll(200)
                if produce_after_join is not None and c.assignment():
                    for tp in c.assignment():
                        c.position(tp)  # resolve the reset position before producing
                    produce_after_join()
                    produce_after_join = None
                for records in batches.values():
                    out += [
                        Rec(r.partition, r.offset, r.key, r.value, tuple(r.headers or ())) for r in records
                    ]
                return len(out) >= count

            _read_up_to(f"{count} records of {topic}", read, timeout)
            return out
        finally:
            c.close()

    def fetch_at(self, topic: str, partition: int, offset: int) -> list[Rec]:
        from kafka import TopicPartition
        from kafka.errors import OffsetOutOfRangeError

        c = self._consumer(None, "none")
        try:
            tp = TopicPartition(topic, partition)
            c.assign([tp])
            c.seek(tp, offset)
            out: list[Rec] = []

            def read() -> bool:
                try:
                    batches = c.poll(200)
                except OffsetOutOfRangeError as exc:
                    raise BrokerError(OFFSET_OUT_OF_RANGE, str(exc)) from exc
                for records in list(batches.values())[:1]:
                    out.extend(Rec(r.partition, r.offset, r.key, r.value) for r in records)
                return bool(out)

            _read_up_to(f"records of {topic}-{partition} at {offset}", read, 20)
            return out
        finally:
            c.close()

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        try:
            result = self.admin.delete_records({tp: offset})
        except Exception as exc:
            raise self._wrap(exc) from exc
        value = result[tp]
        if isinstance(value, Exception):
            raise self._wrap(value)
        return int(value["low_watermark"] if isinstance(value, dict) else value)

    def earliest(self, topic: str, partition: int) -> int:
        from kafka import TopicPartition

        c = self._consumer(None, "earliest")
        try:
            tp = TopicPartition(topic, partition)
            return int(c.beginning_offsets([tp])[tp])
        finally:
            c.close()

    def latest(self, topic: str, partition: int) -> int:
        from kafka import TopicPartition

        c = self._consumer(None, "earliest")
        try:
            tp = TopicPartition(topic, partition)
            return int(c.end_offsets([tp])[tp])
        finally:
            c.close()

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        c = self._consumer(group, "earliest")
        try:
            tp = TopicPartition(topic, partition)
            c.assign([tp])
            c.commit({tp: OffsetAndMetadata(offset, "", -1)})
        finally:
            c.close()

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        from kafka import TopicPartition

        c = self._consumer(group, "earliest")
        try:
            off = c.committed(TopicPartition(topic, partition))
            return None if off is None or off < 0 else int(off)
        finally:
            c.close()

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from kafka.admin import ConfigResource, ConfigResourceType

        result = self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
        entries = _find_configs(result, topic)
        return {k: (v.get("value") if isinstance(v, dict) else v) for k, v in entries.items()}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        result = self.admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)], raise_on_unknown=False
        )
        for err in _leaves(result):
            if isinstance(err, Exception) and getattr(err, "errno", None):
                raise self._wrap(err)
            # kafka-python 3 reports a per-resource failure as "[Error 40] InvalidConfigurationError: ..."
            m = re.match(r"\[Error (-?\d+)\]", err) if isinstance(err, str) else None
            if m and int(m.group(1)):
                raise BrokerError(int(m.group(1)), err)

    def member(self, group: str, topic: str) -> Member:
        c = self._consumer(group, "earliest")
        _known_partitions(c, topic, 30)
        c.subscribe([topic])
        return _KafkaPythonMember(c)

    def close(self) -> None:
        self.admin.close()


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [leaf for v in obj.values() for leaf in _leaves(v)]
    return [obj]


def _find_configs(result: Any, topic: str) -> dict[str, Any]:
    """kafka-python nests describe_configs results by type and name; find the topic's map."""
    if isinstance(result, dict):
        if topic in result and isinstance(result[topic], dict):
            return result[topic]
        for v in result.values():
            found = _find_configs(v, topic)
            if found:
                return found
    return {}


def _known_partitions(consumer: Any, topic: str, timeout: float) -> set[int]:
    """The topic's partitions, once the consumer's metadata has them: a kafka-python member that joins
    before then is assigned nothing ("No partition metadata for topic") until its next metadata refresh,
    minutes later."""

    def known() -> set[int] | None:  # None until the consumer's metadata has the topic
        partitions: set[int] | None = consumer.partitions_for_topic(topic)
        return partitions

    return until(f"{topic}'s partitions", known, timeout, 0.1)


class _KafkaPythonMember:
    def __init__(self, consumer: Any):
        self.c = consumer

    def poll(self) -> None:
        self.c.poll(100)

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}

    def close(self) -> None:
        self.c.close()


# ---------------------------------------------------------------------------------------------
# aiokafka (driven from a private event loop thread so the scenarios stay synchronous)


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class AiokafkaClient:
    name = "aiokafka"

    def __init__(self, bootstrap: str, security: Security = PLAINTEXT):
        self.bootstrap = bootstrap
        self.security = security
        self.loop = _LoopThread()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        from aiokafka.errors import KafkaError

        try:
            return self.loop.run(coro)
        except KafkaError as exc:
            code = getattr(exc, "errno", None)
            if code is None:
                raise
            raise BrokerError(int(code), str(exc)) from exc

    async def _admin(self) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, **self.security.aiokafka())
        await admin.start()
        return admin

    def _consumer(self, group: str | None, reset: str, *topics: str) -> Any:
        from aiokafka import AIOKafkaConsumer

        return AIOKafkaConsumer(
            *topics,
            bootstrap_servers=self.bootstrap,
            **self.security.aiokafka(),
            group_id=group,
            auto_offset_reset=reset,
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            metadata_max_age_ms=1000,
        )

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        from aiokafka.admin import NewTopic

        async def go() -> None:
            admin = await self._admin()
            try:
                await admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
            finally:
                await admin.close()

        self._run(go())

    def produce(
        self,
        topic: str,
        records: list[tuple[bytes | None, bytes | None]],
        *,
        partition: int = 0,
        compression: str = "none",
        headers: list[tuple[str, bytes]] | None = None,
    ) -> list[int]:
        from aiokafka import AIOKafkaProducer

        async def go() -> list[int]:
            p = AIOKafkaProducer(
                **self.security.aiokafka(),
                bootstrap_servers=self.bootstrap,
                linger_ms=5,
                acks="all",
                compression_type=None if compression == "none" else compression,
            )
            await p.start()
            try:
                futs = [
                    await p.send(topic, value=v, key=k, partition=partition, headers=headers)
                    for k, v in records
                ]
                return [(await f).offset for f in futs]
            finally:
                await p.stop()

        return self._run(go())

    def consume(
        self,
        topic: str,
        count: int,
        *,
        group: str | None = None,
        reset: str = "earliest",
        timeout: float = 30.0,
        produce_after_join: Any = None,
    ) -> list[Rec]:
        async def go() -> list[Rec]:
            c = self._consumer(group or f"g-{uuid.uuid4().hex}", reset, topic)
            await c.start()
            out: list[Rec] = []
            pending = produce_after_join
            try:
                # Bounded by the loop's own timeout; running out of time returns what came, as the others.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        while len(out) < count:
                            batches = await c.getmany(timeout_ms=200)
                            if pending is not None and c.assignment():
                                for tp in c.assignment():
                                    await c.position(tp)
                                await asyncio.to_thread(pending)
                                pending = None
                            for records in batches.values():
                                out += [
                                    Rec(r.partition, r.offset, r.key, r.value, tuple(r.headers or ()))
                                    for r in records
                                ]
                return out
            finally:
                await c.stop()

        return self._run(go())

    def fetch_at(self, topic: str, partition: int, offset: int) -> list[Rec]:
        from aiokafka import TopicPartition
        from aiokafka.errors import OffsetOutOfRangeError

        async def go() -> list[Rec]:
            c = self._consumer(None, "none")
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                c.assign([tp])
                c.seek(tp, offset)
                try:
                    batches = await asyncio.wait_for(c.getmany(tp, timeout_ms=10000), 20)
                except OffsetOutOfRangeError as exc:
                    raise BrokerError(OFFSET_OUT_OF_RANGE, str(exc)) from exc
                return [Rec(r.partition, r.offset, r.key, r.value) for rs in batches.values() for r in rs]
            finally:
                await c.stop()

        return self._run(go())

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        from aiokafka import TopicPartition
        from aiokafka.admin import RecordsToDelete

        async def go() -> int:
            admin = await self._admin()
            try:
                tp = TopicPartition(topic, partition)
                result = await admin.delete_records({tp: RecordsToDelete(offset)})
                return int(result[tp])
            finally:
                await admin.close()

        return self._run(go())

    def _offsets(self, topic: str, partition: int, end: bool) -> int:
        from aiokafka import TopicPartition

        async def go() -> int:
            c = self._consumer(None, "earliest")
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                found = await (c.end_offsets([tp]) if end else c.beginning_offsets([tp]))
                return int(found[tp])
            finally:
                await c.stop()

        return self._run(go())

    def earliest(self, topic: str, partition: int) -> int:
        return self._offsets(topic, partition, end=False)

    def latest(self, topic: str, partition: int) -> int:
        return self._offsets(topic, partition, end=True)

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        from aiokafka import TopicPartition

        async def go() -> None:
            c = self._consumer(group, "earliest")
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                c.assign([tp])
                await c.commit({tp: offset})
            finally:
                await c.stop()

        self._run(go())

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        from aiokafka import TopicPartition

        async def go() -> int | None:
            c = self._consumer(group, "earliest")
            await c.start()
            try:
                off = await c.committed(TopicPartition(topic, partition))
                return None if off is None or off < 0 else int(off)
            finally:
                await c.stop()

        return self._run(go())

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go() -> dict[str, str | None]:
            admin = await self._admin()
            try:
                responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
                out: dict[str, str | None] = {}
                for resp in responses:
                    for result in resp.resources:
                        error_code, _msg, _rtype, name, entries = result[:5]
                        if error_code:
                            raise BrokerError(error_code, _msg or "")
                        if name == topic:
                            out.update({e[0]: e[1] for e in entries})
                return out
            finally:
                await admin.close()

        return self._run(go())

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go() -> None:
            admin = await self._admin()
            try:
                responses = await admin.alter_configs(
                    [ConfigResource(ConfigResourceType.TOPIC, topic, configs)]
                )
                for resp in responses:
                    for error_code, msg, *_ in resp.resources:
                        if error_code:
                            raise BrokerError(error_code, msg or "")
            finally:
                await admin.close()

        self._run(go())

    def member(self, group: str, topic: str) -> Member:
        async def make() -> Any:
            c = self._consumer(group, "earliest", topic)  # must be created on its loop
            await c.start()
            return c

        return _AiokafkaMember(self.loop, self.loop.run(make()))

    def close(self) -> None:
        self.loop.close()


class _AiokafkaMember:
    def __init__(self, loop: _LoopThread, consumer: Any):
        self.loop = loop
        self.c = consumer

    def poll(self) -> None:
        self.loop.run(self.c.getmany(timeout_ms=100))

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.c.assignment()}

    def close(self) -> None:
        self.loop.run(self.c.stop())


CLIENTS: dict[str, type[Any]] = {
    "confluent-kafka": ConfluentClient,
    "kafka-python": KafkaPythonClient,
    "aiokafka": AiokafkaClient,
}
