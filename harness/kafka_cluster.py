"""A 3-node Apache Kafka KRaft cluster: replication factor 3, `min.insync.replicas=2`, leaders spread over
brokers, and nodes a test can stop, restart, freeze and thaw.

Each node is one JVM with both roles (`process.roles=broker,controller`, a static quorum of the three):
three JVMs rather than four with a dedicated controller, and with one node down the other two are still a
controller majority, so leaders move and topics can be created. A frozen node (SIGSTOP) keeps its broker
registration for `broker.session.timeout.ms` (45 s here): to its peers it is a live replica that does not
fetch, which is what KIP-107's DeleteRecords waits for. A stopped node (SIGTERM) shuts down in a
controlled way: its leaderships move first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.bounded import until
from harness.child_process import die_with_parent
from harness.kafka import (
    BROKER_JVM_OPTS,
    BROKER_LOG_CONFIG,
    FAST_SETTINGS,
    KAFKA_VERSION,
    KafkaStartError,
    java_command,
    kafka_tool,
    random_cluster_id,
)
from harness.ports import free_port

# The single node's quick settings, with what three replicas need.
CLUSTER_SETTINGS: Mapping[str, str] = {
    **FAST_SETTINGS,
    "num.partitions": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    # A frozen node stays a registered, live replica this long (a stopped one is fenced at once, but its
    # session also lasts this long: a restarted node's registration is refused as a duplicate until
    # then, so it keeps trying for longer than that).
    "broker.session.timeout.ms": "45000",
    "initial.broker.registration.timeout.ms": "90000",
    "broker.heartbeat.interval.ms": "1000",
    # Leaders move only when a test moves them (no preferred-leader rebalance behind its back).
    "auto.leader.rebalance.enable": "false",
}
NODE_HEAP = "512m"
_STARTED = "Kafka Server started"


@dataclass
class KafkaNode:
    """One node (broker and controller) of the cluster."""

    node_id: int
    host: str
    port: int
    controller_port: int
    work_dir: Path
    heap: str
    process: subprocess.Popen[bytes] | None = None
    frozen: bool = False

    @property
    def data_dir(self) -> Path:
        return self.work_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.work_dir / "server.log"

    @property
    def properties(self) -> Path:
        return self.work_dir / "server.properties"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_file.exists():
            return "(no broker log)"
        return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])

    def launch(self) -> None:
        """Start the JVM on the formatted storage (see `wait_started`)."""
        self.log_file.unlink(missing_ok=True)
        cmd = java_command(
            "kafka.Kafka",
            str(self.properties),
            jvm_opts=(
                *BROKER_JVM_OPTS,
                f"-Xmx{self.heap}",
                f"-Dkafka.logs.file={self.log_file}",
                f"-Dkafka.logs.dir={self.work_dir}",
            ),
            log_config=BROKER_LOG_CONFIG,
        )
        with (self.work_dir / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent
            )

    def wait_started(self, deadline: float) -> None:
        def started() -> bool:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise KafkaStartError(f"node {self.node_id} exited with {code}\n{self.log_tail()}")
            return self.log_file.exists() and _STARTED in self.log_file.read_text(errors="replace")

        try:
            until(f"node {self.node_id} started", started, max(deadline - time.monotonic(), 0), 0.1)
        except TimeoutError:
            raise KafkaStartError(f"node {self.node_id} did not start in time\n{self.log_tail()}") from None

    def start(self, timeout: float = 120) -> None:
        """Start a stopped node again and wait until it serves (up to `broker.session.timeout.ms` after
        its stop: the controller keeps its old session until then)."""
        self.launch()
        self.wait_started(time.monotonic() + timeout)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (a controlled shutdown: leaderships move first), SIGKILL after `timeout`."""
        if self.process is None or self.process.poll() is not None:
            return
        if self.frozen:
            self.thaw()
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: the node stops answering (and fetching) but stays registered until its session ends."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)
        self.frozen = False


@dataclass
class KafkaCluster:
    nodes: list[KafkaNode]
    start_seconds: float = 0.0
    version: str = KAFKA_VERSION
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.nodes if n.running and not n.frozen)

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def partition_state(
        self, topic: str, partition: int, timeout: float = 30
    ) -> tuple[int, list[int], list[int]]:
        """(leader, replicas, in-sync replicas) as the cluster's metadata tells (waits for a leader)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})

        def with_leader() -> tuple[int, list[int], list[int]] | None:
            md = admin.list_topics(topic, timeout=10).topics[topic]
            p = md.partitions.get(partition) if md.error is None else None
            return (p.leader, list(p.replicas), list(p.isrs)) if p is not None and p.leader >= 0 else None

        return until(f"a leader of {topic}-{partition}", with_leader, timeout, 0.2)

    def leader(self, topic: str, partition: int) -> KafkaNode:
        return self.node(self.partition_state(topic, partition)[0])

    def stop(self, timeout: float = 10) -> None:
        """All nodes at once (one by one, the last would wait for a controller quorum that has gone)."""
        running = [n for n in self.nodes if n.running]
        for n in running:
            assert n.process is not None
            if n.frozen:
                n.thaw()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(n.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for n in running:
            assert n.process is not None
            try:
                n.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(n.process.pid, signal.SIGKILL)
                n.process.wait()


@contextmanager
def apache_kafka_cluster(
    work_dir: Path,
    overrides: Mapping[str, str] | None = None,
    *,
    nodes: int = 3,
    host: str = "127.0.0.1",
    start_timeout: float = 150,
    heap: str = NODE_HEAP,
) -> Iterator[KafkaCluster]:
    """Format and start `nodes` broker+controller nodes in `work_dir`/node-<id>; stop them on exit."""
    shutil.rmtree(work_dir, ignore_errors=True)
    members = [
        KafkaNode(i, host, free_port(host), free_port(host), work_dir / f"node-{i}", heap)
        for i in range(1, nodes + 1)
    ]
    voters = ",".join(f"{n.node_id}@{host}:{n.controller_port}" for n in members)
    settings = {**CLUSTER_SETTINGS, **(overrides or {})}
    cluster_id = random_cluster_id()
    for n in members:
        n.work_dir.mkdir(parents=True, exist_ok=True)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(n.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{host}:{n.port},CONTROLLER://{host}:{n.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{n.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(n.data_dir),
            **settings,
        }
        n.properties.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    started = time.monotonic()
    cluster = KafkaCluster(members, settings=settings)
    try:
        with ThreadPoolExecutor(len(members)) as pool:  # three short JVMs at once
            list(
                pool.map(
                    lambda n: kafka_tool(
                        "kafka-storage", "format", f"--cluster-id={cluster_id}", "--config", str(n.properties)
                    ),
                    members,
                )
            )
        for n in members:
            n.launch()
        deadline = started + start_timeout
        for n in members:
            n.wait_started(deadline)
        cluster.start_seconds = time.monotonic() - started
        yield cluster
    finally:
        cluster.stop()
