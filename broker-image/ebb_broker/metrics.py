"""Prometheus metrics of one broker, served on --metrics-port.

Request counters and latencies are recorded by the server; the per-partition gauges (log size,
log start offset, high watermark) are read from the log engine at scrape time so they are never
stale; retention, cleaner and DeleteRecords counters are bumped by whoever did the work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


class _PartitionCollector(Collector):
    """Per-partition gauges computed on scrape from a callable yielding (topic, partition, log)."""

    def __init__(self, partitions: Callable[[], Iterable[tuple[str, int, Any]]]):
        self._partitions = partitions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("ebb_log_size_bytes", "Bytes of the partition's log on disk", labels=labels)
        start = GaugeMetricFamily("ebb_log_start_offset", "Log start offset (low watermark)", labels=labels)
        hw = GaugeMetricFamily("ebb_high_watermark", "High watermark of the partition", labels=labels)
        for topic, partition, log in self._partitions():
            key = [topic, str(partition)]
            size.add_metric(key, log.size_in_bytes())
            start.add_metric(key, log.log_start_offset)
            hw.add_metric(key, log.high_watermark)
        yield size
        yield start
        yield hw


class _PurgatoryCollector(Collector):
    """The fetch purgatory's figures (protocol.purgatory.FetchPurgatory), read at scrape time."""

    def __init__(self, purgatory: Any):
        self._purgatory = purgatory

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield GaugeMetricFamily(
            "ebb_fetch_purgatory_size",
            "Fetch requests parked until records arrive (Kafka's Fetch purgatory, NumDelayedOperations)",
            value=self._purgatory.size,
        )
        yield CounterMetricFamily(
            "ebb_fetch_purgatory_wakeups",
            "Parked fetches woken by an append to one of their partitions",
            value=self._purgatory.wakeups,
        )


class _ClientQuotaCollector(Collector):
    """The client quotas' rates and throttling (quota.manager), per sharing group, read at scrape time:
    a group's series go when its rate is dropped (idle for an hour), as Kafka expires its sensors; the
    limit's series goes as soon as the quota is lifted."""

    def __init__(self, quotas: Any):
        self._quotas = quotas

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        labels = ["type", "user", "client_id"]
        rate = GaugeMetricFamily(
            "ebb_client_quota_byte_rate",
            "Bytes per second over the quota window (Kafka's byte-rate)",
            labels=labels,
        )
        limit = GaugeMetricFamily(
            "ebb_client_quota_limit_bytes_per_second", "The quota in force", labels=labels
        )
        throttled = CounterMetricFamily(
            "ebb_client_quota_throttled", "Responses that throttled the client (KIP-219)", labels=labels
        )
        seconds = CounterMetricFamily(
            "ebb_client_quota_throttle_seconds", "Throttle time given to the client", labels=labels
        )
        for s in self._quotas.sensors():
            key = [s.quota_type.label, s.user, s.client_id]
            rate.add_metric(key, s.rate)
            if s.limit is not None:
                limit.add_metric(key, s.limit)
            throttled.add_metric(key, s.throttled)
            seconds.add_metric(key, s.throttle_ms_total / 1000)
        yield from (rate, limit, throttled, seconds)


class BrokerMetrics:
    """Every metric the broker exports, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.bytes_in = Counter("ebb_network_bytes_in", "Request bytes received", registry=r)
        self.bytes_out = Counter("ebb_network_bytes_out", "Response bytes sent", registry=r)
        self.connections = Gauge("ebb_connections", "Open client connections", registry=r)
        self.request_pool_available = Gauge(
            "ebb_request_pool_available_bytes",
            "Bytes left for requests being read and handled (queued.max.request.bytes; Kafka's "
            "MemoryPoolAvailable); negative while one request larger than what was left holds it",
            registry=r,
        )
        self.connections_rejected = Counter(
            "ebb_connections_closed_by_broker",
            "Connections the broker refused or closed (max_connections_per_ip, frame_size, bad_request, "
            "idle, tls_handshake, authentication)",
            ["reason"],
            registry=r,
        )
        self.requests = Counter("ebb_requests", "Requests served", ["api"], registry=r)
        self.request_seconds = Histogram(
            "ebb_request_duration_seconds",
            "Time to handle a request",
            ["api"],
            registry=r,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.retention_passes = Counter(
            "ebb_retention_passes", "Retention passes completed (every rule checked on every log)", registry=r
        )
        self.cleaner_checks = Counter(
            "ebb_cleaner_checks", "Cleaner passes that looked for a log to clean, cleaned or not", registry=r
        )
        self.cleaner_runs = Counter("ebb_cleaner_runs", "Log cleaner passes that cleaned a log", registry=r)
        self.cleaner_bytes_reclaimed = Counter(
            "ebb_cleaner_bytes_reclaimed", "Bytes freed by the log cleaner", registry=r
        )
        self.records_deleted = Counter(
            "ebb_records_deleted",
            "Records made unreadable by DeleteRecords (KIP-107)",
            ["reason"],
            registry=r,
        )
        self.retention_segments_deleted = Counter(
            "ebb_retention_segments_deleted", "Segments deleted by retention, by rule", ["rule"], registry=r
        )
        self.retention_bytes_deleted = Counter(
            "ebb_retention_bytes_deleted", "Bytes of segments deleted by retention", registry=r
        )
        self.records_deleted_unread = Counter(
            "ebb_records_deleted_unread",
            "Records (offsets) that left the log below a group's commit: deleted before that group read them",
            ["topic", "group"],
            registry=r,
        )

    def observe_request(self, api: str, seconds: float) -> None:
        self.requests.labels(api).inc()
        self.request_seconds.labels(api).observe(seconds)

    def watch_partitions(self, partitions: Callable[[], Iterable[tuple[str, int, Any]]]) -> None:
        self.registry.register(_PartitionCollector(partitions))

    def watch_fetch_purgatory(self, purgatory: Any) -> None:
        """Parked fetches (``size``) and how many appends woke one (``wakeups``), read at scrape time."""
        self.registry.register(_PurgatoryCollector(purgatory))

    def watch_client_quotas(self, quotas: Any) -> None:
        """Per client quota sharing group: byte rate, quota, throttled responses and throttle time."""
        self.registry.register(_ClientQuotaCollector(quotas))

    def serve(self, host: str, port: int) -> None:
        """Expose /metrics over HTTP on a daemon thread."""
        start_http_server(port, addr=host, registry=self.registry)

    def record_retention(self, report: Any) -> None:
        """Count what one retention pass deleted, per rule (time, size, log start, KIP-68 consumed)."""
        for result in report.partitions.values():
            for reason, segments in result.by_reason.items():
                self.retention_segments_deleted.labels(reason).inc(segments)
        self.retention_bytes_deleted.inc(report.bytes_deleted)
        self.retention_passes.inc()

    def record_cleaner(self, report: Any) -> None:
        self.cleaner_runs.inc()
        stats = report.stats
        self.cleaner_bytes_reclaimed.inc(max(stats.bytes_read - stats.bytes_written, 0))
