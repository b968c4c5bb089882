"""Assembles one broker: log engine, group coordinator, Kafka server, metrics, background work.

Who owns what: the event loop owns the group coordinator's state. Maintenance (retention, the cleaner,
checkpoints) and fsyncs run in worker threads and never read that state: each retention pass gets an
immutable snapshot of the minimum committed offsets (KIP-68), taken on the loop just before it starts.
Until the coordinator has replayed `__consumer_offsets` the snapshot says "unknown" and retention skips
consumed-retention decisions. Shutdown closes the server first so no request races the engine's final
flush, checkpoints and clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.config import BrokerConfig
from ebb_broker.coordinator.group_coordinator import GroupCoordinator
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.producer_ids import ProducerIdManager
from ebb_broker.log import LogManager
from ebb_broker.metrics import BrokerMetrics
from ebb_broker.protocol import apis  # noqa: F401  (registers every API)
from ebb_broker.protocol.context import Broker, BrokerIdentity
from ebb_broker.protocol.server import KafkaServer

log = logging.getLogger("ebb_broker")

CLUSTER_ID_FILE = "meta.properties"


@dataclass(frozen=True)
class BrokerOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    broker_id: int = 0
    metrics_port: int | None = None
    configs: dict[str, str] | None = None


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


async def run(options: BrokerOptions) -> None:
    options.data_dir.mkdir(parents=True, exist_ok=True)
    config = BrokerConfig.parse(options.configs or {})
    metrics = BrokerMetrics()
    logs = LogManager.open(options.data_dir, config.log_manager_config())
    groups = GroupCoordinator(OffsetsStore(logs, config.offsets_topic_num_partitions))
    groups.load()
    identity = BrokerIdentity(
        options.broker_id,
        options.advertised_host or options.host,
        options.port,
        _cluster_id(options.data_dir),
    )
    broker = Broker(
        identity, config, logs, groups, metrics, ProducerIdManager(options.data_dir), options.data_dir
    )
    metrics.watch_partitions(
        lambda: (
            (topic, p, logs.get_log(topic, p))
            for topic, meta in logs.topics().items()
            for p in range(meta.partitions)
        )
    )

    server = KafkaServer(broker, options.host, options.port)
    await server.start()
    if options.port == 0:
        # Port 0 picks a free port; advertise the one actually bound.
        broker.identity = BrokerIdentity(identity.node_id, identity.host, server.port, identity.cluster_id)
    if options.metrics_port is not None:
        metrics.serve(options.host, options.metrics_port)
    groups.start()

    async def retention() -> None:
        snapshot = groups.committed_snapshot()  # on the loop, which owns the coordinator's state
        report = await asyncio.to_thread(logs.run_retention, snapshot)
        metrics.record_retention(report)

    async def cleaner() -> None:
        report = await asyncio.to_thread(logs.run_cleaner)
        metrics.cleaner_checks.inc()
        if report is not None:
            metrics.record_cleaner(report)

    async def checkpoint() -> None:
        await asyncio.to_thread(logs.checkpoint)

    async def flush() -> None:  # flush.ms / log.flush.interval.ms
        await asyncio.to_thread(logs.flush_dirty_logs)

    tasks = [
        asyncio.create_task(_every(config.log_retention_check_interval_ms, "retention", retention)),
        asyncio.create_task(_every(max(config.log_cleaner_backoff_ms, 100), "cleaner", cleaner)),
        asyncio.create_task(
            _every(config.log_flush_offset_checkpoint_interval_ms or 60_000, "checkpoint", checkpoint)
        ),
        asyncio.create_task(_every(config.log_flush_scheduler_interval_ms, "flush", flush)),
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"ebb-broker listening on {options.host}:{server.port}", flush=True)
    await stop.wait()
    log.info("shutting down: closing connections, flushing, writing checkpoints")
    await server.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await groups.stop()
    logs.close()
    log.info("clean shutdown complete")
