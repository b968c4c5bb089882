"""Apache Kafka as a test peer: its CLI tools by main class, and a single-node KRaft broker.

`make harness-kafka` assembles the jars (harness/kafka/pom.xml) into $EBB_CACHE/kafka/<version>/libs;
this module only runs them. Every JVM started here is killed again by its owner (`kafka_tool` waits for it,
`apache_kafka` is a context manager and the broker dies with its parent), so no test leaves a Java
process behind.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bounded import until
from harness.child_process import die_with_parent
from harness.ports import free_port

HARNESS = Path(__file__).parent / "kafka"
POM = HARNESS / "pom.xml"
TOOLS_LOG_CONFIG = HARNESS / "log4j2.properties"
BROKER_LOG_CONFIG = HARNESS / "log4j2-broker.properties"


def kafka_version() -> str:
    """The pinned Apache Kafka version: the one property of pom.xml everything else is keyed by."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM} has no <kafka.version> property")
    return match.group(1)


KAFKA_VERSION = kafka_version()


class KafkaNotAssembledError(RuntimeError):
    """The jars are missing: the harness never downloads at test time, `make harness-kafka` does."""


def libs_dir() -> Path:
    """$EBB_CACHE/kafka/<version>/libs, checked to be complete."""
    cache = Path(os.environ.get("EBB_CACHE", Path.home() / ".cache" / "ebb"))
    libs = cache / "kafka" / KAFKA_VERSION / "libs"
    if not (libs / ".assembled").is_file():
        raise KafkaNotAssembledError(
            f"Apache Kafka {KAFKA_VERSION} is not assembled in {libs}: run `make harness-kafka`"
        )
    return libs


# kafka-*.sh script name -> main class, as Apache Kafka 4.3's bin/ scripts run them.
TOOLS: Mapping[str, str] = {
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
}

# Short-lived tools spend most of their time starting the JVM: C1 only and the serial GC cut that by about
# half, and a small heap keeps five engineers' JVMs within the machine's memory.
TOOL_JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
BROKER_JVM_OPTS = ("-Xms256m", "-XX:+UseG1GC", "-XX:-UsePerfData", "-Djava.awt.headless=true")
BROKER_HEAP = "1g"  # -Xmx; a benchmark holding millions of committed offsets passes more


def java_command(
    main_class: str,
    *args: str,
    jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS,
    log_config: Path = TOOLS_LOG_CONFIG,
) -> list[str]:
    """The `java` command line running `main_class` on the assembled classpath (quiet logging by default)."""
    return [
        "java",
        *jvm_opts,
        f"-Dlog4j2.configurationFile={log_config}",
        "-cp",
        f"{libs_dir()}/*",
        main_class,
        *args,
    ]


class KafkaToolError(RuntimeError):
    """A Kafka tool exited non-zero; the message carries its command line and output."""


def kafka_tool(
    name: str,
    *args: str,
    input: str | None = None,
    timeout: float = 120,
    check: bool = True,
    jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS,
) -> subprocess.CompletedProcess[str]:
    """Run one of Apache Kafka's CLI tools (`TOOLS`) like its kafka-*.sh script would, and return its output.

    With `check`, a non-zero exit raises `KafkaToolError` with stdout and stderr in the message.
    `jvm_opts` replaces the quick-start options (benchmarks want the full JIT, as the scripts run).
    """
    try:
        main_class = TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown Kafka tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None
    cmd = java_command(main_class, *args, jvm_opts=jvm_opts)
    proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise KafkaToolError(
            f"{name} {' '.join(args)} exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc


CONSUMER_OFFSETS_VECTORS = HARNESS / "ConsumerOffsetsVectors.java"


def consumer_offsets_vectors(timeout: float = 120) -> dict[str, Any]:
    """`__consumer_offsets` records written by Apache Kafka's own classes, with the fields its reader
    reads back (ConsumerOffsetsVectors.java, run from source on the assembled classpath). The unit tests
    keep a copy (tests/unit/formats/consumer_offsets_vectors.json; `make consumer-offsets-vectors`)."""
    cmd = java_command(str(CONSUMER_OFFSETS_VECTORS))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise KafkaToolError(f"{CONSUMER_OFFSETS_VECTORS.name} exited {proc.returncode}\n{proc.stderr}")
    vectors: dict[str, Any] = json.loads(proc.stdout)
    return vectors


def random_cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` prints it (base64url of 16 random bytes, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


# Settings that make a single node quick to start and quick to act in tests; any of them can be overridden.
FAST_SETTINGS: Mapping[str, str] = {
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # Kafka 4 refuses segment.bytes below 1 MiB (KAFKA-16368).
    "log.segment.bytes": str(1024 * 1024),
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
    "log.cleaner.backoff.ms": "1000",
    "log.segment.delete.delay.ms": "0",
    # Client quota rates averaged over 2-3 s instead of 10-11 s: a throttled client settles within seconds.
    "quota.window.num": "3",
}


@dataclass
class KafkaBroker:
    """A running single-node KRaft Apache Kafka: what tests, the operator tier and benchmarks connect to."""

    host: str
    port: int
    controller_port: int
    work_dir: Path
    data_dir: Path
    log_file: Path
    process: subprocess.Popen[bytes]
    start_seconds: float
    version: str = KAFKA_VERSION
    settings: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    # Ports of the extra listeners asked for with `apache_kafka(..., listeners={NAME: PROTOCOL})`.
    listener_ports: dict[str, int] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_of(self, listener: str) -> str:
        """host:port of an extra listener (by name)."""
        return f"{self.host}:{self.listener_ports[listener]}"

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def segment_files(self, topic: str, partition: int) -> list[Path]:
        """The partition's `.log` segments in offset order (20-digit names sort as numbers)."""
        return sorted(self.partition_dir(topic, partition).glob("*.log"))

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_file.exists():
            return "(no broker log)"
        return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (Kafka's controlled shutdown), SIGKILL after `timeout`; the whole process group goes."""
        _terminate(self.process, timeout)

    def restart(self, start_timeout: float = 90) -> None:
        """Stop the broker and start it again on the same data and ports (a single-node failover: the
        group coordinator reloads `__consumer_offsets`)."""
        self.stop()
        self.log_file.unlink(missing_ok=True)
        started = time.monotonic()
        self.process = _launch(self.command, self.work_dir)
        problem = _wait_serving(self, started + start_timeout)
        if problem:
            self.stop()
            raise KafkaStartError(f"{problem} (restart)\n--- {self.log_file}\n{self.log_tail()}")
        self.start_seconds = time.monotonic() - started


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


class KafkaStartError(RuntimeError):
    """The broker exited or did not serve in time; the message carries the end of its log."""


def _write_properties(path: Path, props: Mapping[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def _serving(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# KafkaRaftServer logs this once the broker is unfenced and its socket server accepts requests.
_STARTED = "Kafka Server started"


def _launch(cmd: list[str], work_dir: Path) -> subprocess.Popen[bytes]:
    """Start the broker JVM in its own process group, its output appended to `stdout.log`."""
    with (work_dir / "stdout.log").open("ab") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent
        )


def _wait_serving(broker: KafkaBroker, deadline: float) -> str:
    """Empty once the broker logged its start and accepts connections, else what went wrong."""

    def serving_or_exited() -> bool:
        if broker.process.poll() is not None:
            return True
        log = broker.log_file
        started = log.exists() and _STARTED in log.read_text(errors="replace")
        return started and _serving(broker.host, broker.port)

    try:
        until("Apache Kafka serving", serving_or_exited, max(deadline - time.monotonic(), 0), 0.1)
    except TimeoutError:
        return "Apache Kafka did not serve in time"
    if broker.process.poll() is not None:
        return f"Apache Kafka exited with {broker.process.returncode} while starting"
    return ""


@contextmanager
def apache_kafka(
    work_dir: Path,
    overrides: Mapping[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    start_timeout: float = 90,
    heap: str = BROKER_HEAP,
    listeners: Mapping[str, str] | None = None,
    add_scram: tuple[str, ...] = (),
) -> Iterator[KafkaBroker]:
    """Format storage and run a single-node KRaft broker+controller in `work_dir`; stop it on exit.

    The broker listens on free ports of `host` (tried again with new ports if another process took one
    between choosing and binding); `overrides` replace or extend `FAST_SETTINGS`. `listeners` adds
    listeners beside PLAINTEXT (the inter-broker one), by name -> security protocol, each on a free port
    (`KafkaBroker.bootstrap_of(name)`); their SSL/SASL settings come in `overrides`, e.g.
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config`. `add_scram` values go to
    `kafka-storage format --add-scram` (`SCRAM-SHA-512=[name=admin,password=...]`).
    """
    for attempt in range(3):
        try:
            broker = _start(work_dir, overrides or {}, host, start_timeout, listeners or {}, add_scram, heap)
            break
        except KafkaStartError as exc:
            if attempt == 2 or "Address already in use" not in str(exc):
                raise
            shutil.rmtree(work_dir / "data", ignore_errors=True)
    try:
        yield broker
    finally:
        broker.stop()


def _start(
    work_dir: Path,
    overrides: Mapping[str, str],
    host: str,
    start_timeout: float,
    listeners: Mapping[str, str],
    add_scram: tuple[str, ...],
    heap: str = BROKER_HEAP,
) -> KafkaBroker:
    """One start attempt; the broker is stopped again if it does not come up."""
    work_dir.mkdir(parents=True, exist_ok=True)
    data_dir = work_dir / "data"
    log_file = work_dir / "server.log"
    log_file.unlink(missing_ok=True)
    port, controller_port = free_port(host), free_port(host)
    extra = {name: free_port(host) for name in listeners}
    bound = "".join(f",{name}://{host}:{p}" for name, p in extra.items())
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}{bound}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}{bound}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        + "".join(f",{name}:{protocol}" for name, protocol in listeners.items()),
        "log.dirs": str(data_dir),
        **FAST_SETTINGS,
        **overrides,
    }
    props = work_dir / "server.properties"
    _write_properties(props, settings)

    started = time.monotonic()
    scram = [arg for value in add_scram for arg in ("--add-scram", value)]
    kafka_tool(
        "kafka-storage", "format", f"--cluster-id={random_cluster_id()}", "--config", str(props), *scram
    )
    cmd = java_command(
        "kafka.Kafka",
        str(props),
        jvm_opts=(
            *BROKER_JVM_OPTS,
            f"-Xmx{heap}",
            f"-Dkafka.logs.file={log_file}",
            f"-Dkafka.logs.dir={work_dir}",
        ),
        log_config=BROKER_LOG_CONFIG,
    )
    stdout_file = work_dir / "stdout.log"
    process = _launch(cmd, work_dir)
    broker = KafkaBroker(
        host=host,
        port=port,
        controller_port=controller_port,
        work_dir=work_dir,
        data_dir=data_dir,
        log_file=log_file,
        process=process,
        start_seconds=0.0,
        settings=settings,
        command=cmd,
        listener_ports=extra,
    )
    problem = _wait_serving(broker, started + start_timeout)
    if not problem:
        broker.start_seconds = time.monotonic() - started
        return broker
    broker.stop()
    stdout_tail = "\n".join(stdout_file.read_text(errors="replace").splitlines()[-20:])
    raise KafkaStartError(f"{problem}\n--- {log_file}\n{broker.log_tail()}\n--- {stdout_file}\n{stdout_tail}")


if __name__ == "__main__":
    # `python -m harness.kafka vectors`: Kafka's `__consumer_offsets` test vectors (the unit tests' copy).
    import sys

    if sys.argv[1:] != ["vectors"]:
        raise SystemExit("usage: python -m harness.kafka vectors")
    print(json.dumps(consumer_offsets_vectors(), indent=2, ensure_ascii=False))
