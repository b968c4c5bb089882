"""Assembles one broker: log engine, group coordinator, Kafka server, metrics, background work.

Who owns what: the event loop owns the group coordinator's state. Maintenance (retention, the cleaner,
checkpoints) and fsyncs run in worker threads and never read that state: each retention pass gets an
immutable snapshot of the minimum committed offsets (KIP-68), taken on the loop just before it starts.
Until the coordinator has replayed `__consumer_offsets` the snapshot says "unknown" and retention skips
consumed-retention decisions. Shutdown closes the server first so no request races the engine's final
flush, checkpoints and clean-shutdown marker; every step of it is bounded (ebb_broker.shutdown).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ebb_broker import shutdown
from ebb_broker.config import BrokerConfig, sasl_mechanisms
from ebb_broker.coordinator.group_coordinator import GroupCoordinator
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.producer_ids import ProducerIdManager
from ebb_broker.coordinator.timer import LoopTimer
from ebb_broker.coordinator.transaction_coordinator import TransactionCoordinator
from ebb_broker.coordinator.unread_loss import UnreadLossCounter
from ebb_broker.dynamic_config import DynamicBrokerConfig
from ebb_broker.log import LogManager
from ebb_broker.log.errors import InvalidConfigError
from ebb_broker.log.file_handles import default_handles, raise_descriptor_limit, segment_file_budget
from ebb_broker.metrics import BrokerMetrics
from ebb_broker.protocol import apis  # noqa: F401  (registers every API)
from ebb_broker.protocol.context import Broker, BrokerIdentity
from ebb_broker.protocol.server import KafkaServer, Listener, ServerLimits
from ebb_broker.quota.manager import ClientQuotas
from ebb_broker.quota.store import ClientQuotaStore, CorruptQuotaFileError
from ebb_broker.security.authorizer import Authorizer, parse_super_users
from ebb_broker.security.credentials import CredentialStore, parse_add_scram
from ebb_broker.security.store import CorruptSecurityFileError
from ebb_broker.security.tls import PrincipalMapper, TlsConfigError, server_context
from ebb_broker.shutdown import Shutdown

log = logging.getLogger("ebb_broker")

CLUSTER_ID_FILE = "meta.properties"
# The GIL switch interval (sys.setswitchinterval; Python's default is 5 ms): see run().
SWITCH_INTERVAL_SECONDS = 0.001


@dataclass(frozen=True)
class BrokerOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    broker_id: int = 0
    metrics_port: int | None = None
    configs: dict[str, str] | None = None
    # `--add-scram` values (Kafka's kafka-storage format --add-scram syntax), applied at every start.
    add_scram: tuple[str, ...] = ()


def _cluster_id(data_dir: Path) -> str:
    """A stable cluster id kept in meta.properties, as Kafka keeps its own."""
    path = data_dir / CLUSTER_ID_FILE
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    cid = uuid.uuid4().hex[:22]
    path.write_text(f"version=1\ncluster.id={cid}\n")
    return cid


async def _every(interval_ms: int, name: str, work: Callable[[], Awaitable[None]]) -> None:
    """Await `work` every interval; a failure is logged, never fatal."""
    while True:
        await asyncio.sleep(interval_ms / 1000)
        try:
            await work()
        except Exception:
            log.exception("%s failed", name)


def server_limits(config: BrokerConfig) -> ServerLimits:
    return ServerLimits(
        max_request_bytes=config.socket_request_max_bytes,
        max_unauthenticated_bytes=config.sasl_server_max_receive_size,
        queued_max_request_bytes=config.queued_max_request_bytes,
        idle_ms=config.connections_max_idle_ms,
        max_connections=config.max_connections,
        max_connections_per_ip=config.max_connections_per_ip,
        per_ip_overrides=config.connections_per_ip_overrides,
    )


def listeners(config: BrokerConfig, host: str, port: int) -> list[Listener]:
    """The listeners to serve, each with its TLS context and principal mapping (raises InvalidConfigError)."""
    out = []
    for e in config.endpoints(host, port):
        settings = config.listener_settings(e.name, e.security_protocol)
        try:
            context = server_context(settings, e.name) if e.tls else None
            mapper = PrincipalMapper(settings.get("ssl.principal.mapping.rules") or "DEFAULT")
        except TlsConfigError as exc:
            raise InvalidConfigError(str(exc)) from None
        mechanisms = sasl_mechanisms(settings.get("sasl.enabled.mechanisms"))
        out.append(Listener(e.name, e.security_protocol, e.host, e.port, context, mapper, mechanisms))
    return out


async def run(options: BrokerOptions) -> None:
    options.data_dir.mkdir(parents=True, exist_ok=True)
    dynamic_config = DynamicBrokerConfig(options.data_dir, options.configs or {})
    config = dynamic_config.current  # --config values overlaid with the persisted dynamic ones
    serving = listeners(config, options.host, options.port)
    try:
        bootstrap_users = [parse_add_scram(text) for text in options.add_scram]
        credentials = CredentialStore(options.data_dir)
        quotas = ClientQuotas(
            ClientQuotaStore.open(options.data_dir),
            samples=config.quota_window_num,
            window_seconds=config.quota_window_size_seconds,
        )
        authorizer = (
            Authorizer(
                options.data_dir, parse_super_users(config.super_users), config.allow_everyone_if_no_acl_found
            )
            if config.authorizer_class_name
            else None
        )
    except (ValueError, CorruptSecurityFileError, CorruptQuotaFileError) as exc:
        raise InvalidConfigError(str(exc)) from None
    if bootstrap_users:
        credentials.apply(bootstrap_users, [])
        log.info(
            "SCRAM credentials set from --add-scram: %s",
            ", ".join(f"{u.user} ({u.mechanism})" for u in bootstrap_users),
        )
    # As the JVM does for Kafka: the soft descriptor limit goes up to the hard one, and segment files are
    # kept open within a budget of it (ebb_broker.log.file_handles).
    limit = raise_descriptor_limit()
    default_handles().resize(segment_file_budget(limit))
    metrics = BrokerMetrics()
    logs = LogManager.open(options.data_dir, config.log_manager_config())
    loop = asyncio.get_running_loop()
    # The loop's worker threads (asyncio.to_thread): its own executor, so shutdown can bound joining them.
    workers = ThreadPoolExecutor(thread_name_prefix="ebb-worker")
    loop.set_default_executor(workers)
    # The loop shares the GIL with those threads (a large produce's validation, retention, the cleaner):
    # each time it gives the GIL up (every socket call) it may wait a whole switch interval to get it
    # back. 1 ms instead of 5 cut what a 19 MB produce's validation costs other clients from 168 ms to
    # 69 ms at most; with only the loop running it changes nothing.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    timer = LoopTimer(loop)
    groups = GroupCoordinator(
        OffsetsStore(logs, config.offsets_topic_num_partitions),
        timer,
        config.group_coordinator_config(),
        loop=loop,
    )
    groups.load()
    producer_ids = ProducerIdManager(options.data_dir)
    transactions = TransactionCoordinator(
        logs, groups, producer_ids, timer, config.transaction_coordinator_config()
    )
    transactions.load()
    identity = BrokerIdentity(options.broker_id, options.host, options.port, _cluster_id(options.data_dir))
    broker = Broker(
        identity,
        config,
        logs,
        groups,
        metrics,
        producer_ids,
        options.data_dir,
        credentials,
        quotas,
        authorizer=authorizer,
    )
    broker.dynamic_config = dynamic_config
    metrics.watch_fetch_purgatory(broker.fetches)
    metrics.watch_client_quotas(quotas)

    def count_unread(topic: str, group: str, records: int) -> None:
        metrics.records_deleted_unread.labels(topic, group).inc(records)

    logs.on_log_start_move = UnreadLossCounter(groups.offsets, loop, count_unread).log_start_moved
    broker.transactions = transactions
    metrics.watch_partitions(
        lambda: (
            (topic, p, logs.get_log(topic, p))
            for topic, meta in logs.topics().items()
            for p in range(meta.partitions)
        )
    )

    server = KafkaServer(broker, serving, server_limits(config))
    await server.start()
    # Port 0 picks a free port; an advertised port 0 is the one actually bound.
    bound = {lst.name: lst.port for lst in serving}
    endpoints = {
        name: (host, port or bound[name])
        for name, (host, port) in config.advertised_endpoints(
            config.endpoints(options.host, options.port), options.advertised_host
        ).items()
    }
    first = endpoints[serving[0].name]
    broker.identity = BrokerIdentity(identity.node_id, first[0], first[1], identity.cluster_id, endpoints)
    if options.metrics_port is not None:
        metrics.serve(options.host, options.metrics_port)
    groups.start()
    transactions.start()

    async def retention() -> None:
        # On the loop, which owns the coordinator's state; only the groups consumed retention counts.
        snapshot = groups.committed_snapshot(logs.consumed_retention_groups())
        report = await asyncio.to_thread(logs.run_retention, snapshot)
        metrics.record_retention(report)

    async def cleaner() -> None:
        report = await asyncio.to_thread(logs.run_cleaner)
        metrics.cleaner_checks.inc()
        if report is not None:
            metrics.record_cleaner(report)

    async def checkpoint() -> None:
        await asyncio.to_thread(logs.checkpoint)

    async def expire_producers() -> None:
        now = int(time.time() * 1000)
        await asyncio.to_thread(logs.remove_expired_producers, now, broker.config.producer_id_expiration_ms)

    async def flush() -> None:  # flush.ms / log.flush.interval.ms
        await asyncio.to_thread(logs.flush_dirty_logs)

    tasks = [
        asyncio.create_task(_every(config.log_retention_check_interval_ms, "retention", retention)),
        asyncio.create_task(_every(max(config.log_cleaner_backoff_ms, 100), "cleaner", cleaner)),
        asyncio.create_task(
            _every(config.log_flush_offset_checkpoint_interval_ms or 60_000, "checkpoint", checkpoint)
        ),
        asyncio.create_task(
            _every(config.producer_id_expiration_check_interval_ms, "producer-expiration", expire_producers)
        ),
        asyncio.create_task(_every(config.log_flush_scheduler_interval_ms, "flush", flush)),
    ]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # One line, first listener first (launchers read the first host:port); then every other listener.
    print(
        "ebb-broker listening on "
        + " ".join(f"{lst.host or '0.0.0.0'}:{lst.port} ({lst.name})" for lst in serving),
        flush=True,
    )
    await stop.wait()
    log.info("shutting down: closing connections, flushing, writing checkpoints")
    done = Shutdown()
    await done.step("closing connections", server.close(), shutdown.CLOSE_CONNECTIONS_S)
    for task in tasks:
        task.cancel()
    await done.step(
        "stopping background tasks",
        asyncio.gather(*tasks, return_exceptions=True),
        shutdown.STOP_BACKGROUND_TASKS_S,
    )
    timer.cancel_all()
    # Waits for a running retention or cleaner pass (the maintenance lock), then flushes and checkpoints.
    closed = await done.blocking_step(
        "closing the log manager (flush, checkpoints, clean-shutdown marker)",
        logs.close,
        shutdown.CLOSE_LOG_MANAGER_S,
    )
    await done.blocking_step(
        "joining worker threads",
        lambda: workers.shutdown(wait=True, cancel_futures=True),
        shutdown.JOIN_WORKER_THREADS_S,
    )
    done.exit_if_overran()
    log.info("clean shutdown complete" if closed else "shutdown complete")
