"""The operator's settings, read once at start (command line and environment) and handed on.

`python -m ebb_operator` builds one `OperatorSettings` and passes it to kopf as the operator's memo
(`memo.settings`), so every handler sees the same values and nothing reads the environment later.
docs/operator.md lists each setting with its environment variable and chart value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ebb_operator.election import JITTER

ENV = {
    "namespace": "EBB_OPERATOR_NAMESPACE",
    "default_cluster": "EBB_DEFAULT_CLUSTER",
    "default_bootstrap_servers": "EBB_DEFAULT_BOOTSTRAP_SERVERS",
    "resync_seconds": "EBB_RESYNC_SECONDS",
    "poll_seconds": "EBB_RETENTION_POLL_SECONDS",
    "image": "EBB_OPERATOR_IMAGE",
    "spark_service_account": "EBB_SPARK_SERVICE_ACCOUNT",
    "spark_job_namespace": "EBB_SPARK_JOB_NAMESPACE",
    "spark_image_pull_secrets": "EBB_SPARK_IMAGE_PULL_SECRETS",
    "allow_inline_clusters": "EBB_ALLOW_INLINE_CLUSTERS",
    "admin_idle_seconds": "EBB_ADMIN_IDLE_SECONDS",
    "reclaim_poll_seconds": "EBB_RECLAIM_POLL_SECONDS",
    "local_analysis_runs": "EBB_LOCAL_ANALYSIS_RUNS",
    "local_analysis_java_options": "EBB_LOCAL_ANALYSIS_JAVA_OPTIONS",
    "retry_backoff_seconds": "EBB_RETENTION_BACKOFF_SECONDS",
    "kafka_request_timeout_seconds": "EBB_KAFKA_REQUEST_TIMEOUT_SECONDS",
    "webhook_port": "EBB_WEBHOOK_PORT",
    "webhook_host": "EBB_WEBHOOK_HOST",
    "webhook_managed": "EBB_WEBHOOK_MANAGED",
    "webhook_cert_dir": "EBB_WEBHOOK_CERT_DIR",
    "log_format": "EBB_LOG_FORMAT",
    "leader_election": "EBB_LEADER_ELECTION",
    "lease_name": "EBB_LEADER_LEASE_NAME",
    "lease_seconds": "EBB_LEADER_LEASE_SECONDS",
    "renew_deadline_seconds": "EBB_LEADER_RENEW_DEADLINE_SECONDS",
    "retry_period_seconds": "EBB_LEADER_RETRY_PERIOD_SECONDS",
    "pod_name": "EBB_POD_NAME",
}
# The chart's webhook Service, `<service>.<namespace>.svc`, is the default address the API server calls.
WEBHOOK_SERVICE = "ebb-operator-webhook"
LOG_FORMATS = ("plain", "json")


class SettingsError(ValueError):
    """A setting with a value the operator cannot use; the message names its variable."""


@dataclass(frozen=True)
class OperatorSettings:
    # The operator's own namespace: cluster credentials (KafkaCluster Secrets) are read only there.
    namespace: str = "default"
    # The KafkaCluster of objects that name none (the chart creates one for the broker it installs).
    default_cluster: str | None = None
    # With inline clusters allowed (single-team installs): the bootstrap servers of objects naming none.
    default_bootstrap_servers: str | None = None
    # How often CompactionConfigs are re-applied (drift correction, topics created later).
    resync_seconds: float = 60.0
    # How often a RetentionPolicy's runner looks at its SparkApplication, DeleteRecords and schedule.
    poll_seconds: float = 1.0
    # The operator image; also the Spark driver and executor image of engine SparkApplication.
    image: str | None = None
    # The service account of Spark drivers and executors (created by the chart in the jobs namespace).
    spark_service_account: str | None = None
    # Where SparkApplication runs live (their SparkApplication, request Secret, plan ConfigMap and pods):
    # never a tenant's namespace, since a run's request holds the cluster's credentials. None: `namespace`.
    spark_job_namespace: str | None = None
    # Image pull secrets of Spark driver and executor pods (Secrets of the jobs namespace), comma-separated.
    spark_image_pull_secrets: tuple[str, ...] = ()
    # Whether tenant objects may name a cluster inline (spec.cluster) instead of a KafkaCluster.
    allow_inline_clusters: bool = False
    # Admin connections to a cluster no object used for this long are closed.
    admin_idle_seconds: float = 300.0
    # How often a finished DeleteRecords looks again at what the brokers have freed (reclaimedBytes).
    reclaim_poll_seconds: float = 30.0
    # Engine Local: analysis jobs run at once in the operator's pod (each a Spark driver JVM of a few
    # hundred MiB, up to Spark's 1 GiB heap); further runs wait for a slot, so that many policies due
    # together cannot exhaust the pod's memory limit and take the operator down with them.
    local_analysis_runs: int = 1
    # Engine Local: the driver JVM's options. C1 only: an analysis of a small cluster is mostly JVM start,
    # and the full JIT costs it about 10 s more CPU than it saves (docs/analysis.md, measured).
    local_analysis_java_options: str = "-XX:TieredStopAtLevel=1"
    # A failed RetentionPolicy run is tried again after this, doubling per failure in a row (at most the
    # policy's interval).
    retry_backoff_seconds: float = 10.0
    # How long the operator waits for a broker's answer (the admin client's request.timeout.ms). A broker
    # that is registered but does not answer (a long pause) costs a request this long; DeleteRecords asks
    # the leaders to answer within two thirds of it (KIP-107's wait for the replicas).
    kafka_request_timeout_seconds: float = 15.0
    # The validating admission webhook's port (None: no webhook); served by every replica.
    webhook_port: int | None = None
    # The address the API server calls the webhook at, and the name its certificate covers; None: the
    # chart's Service in the operator's namespace.
    webhook_host: str | None = None
    # Whether the operator registers ValidatingWebhookConfiguration ebb.dev itself (a local process: tests,
    # `make demo`); the chart renders it instead.
    webhook_managed: bool = False
    # A directory with the webhook's tls.crt, tls.key and ca.crt (a cert-manager Secret, mounted); None: the
    # operator makes its own CA and certificate and keeps them in a Secret of its namespace.
    webhook_cert_dir: str | None = None
    # The address the webhook (like metrics and liveness) listens on (`--host`).
    listen_host: str = "0.0.0.0"
    # The namespaces the operator serves (`--namespace`); empty: all.
    namespaces: tuple[str, ...] = ()
    # `plain` lines or one JSON object per line (kopf's JSON formatter: message, severity, timestamp and the
    # object a line is about), for log pipelines that parse fields.
    log_format: str = "plain"
    # One replica acts, the others wait for the Lease (ebb_operator/leader.py, docs/operator.md).
    leader_election: bool = True
    # The Lease in the operator's namespace; two installs sharing a namespace need names of their own.
    lease_name: str = "ebb-operator"
    # client-go's leaseDuration, renewDeadline and retryPeriod (ebb_operator/election.py): a replica takes
    # over a lease it has seen unchanged for lease_seconds; the leader stops acting when it has not renewed
    # for renew_deadline_seconds, before that can happen.
    lease_seconds: float = 12.0
    renew_deadline_seconds: float = 8.0
    retry_period_seconds: float = 2.0
    # The replica's identity in the Lease (the chart sets the pod's name); empty: host name and process id.
    pod_name: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorSettings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, var in ENV.items():
            raw = env.get(var, "")
            if raw or (var in env and name in MAY_BE_EMPTY):
                values[name] = _parse(var, raw, _KINDS.get(name, str))
        settings = cls(**values)  # type: ignore[arg-type]
        settings.check()
        return settings

    def check(self) -> None:
        """Combinations no single value shows wrong (SettingsError naming the variables)."""
        if self.log_format not in LOG_FORMATS:
            raise SettingsError(
                f"{ENV['log_format']}={self.log_format!r}: expected one of {', '.join(LOG_FORMATS)}"
            )
        # client-go's rules (NewLeaderElector): the leader gives up before its lease can be taken, and
        # retries at least once, with jitter, before it gives up.
        if self.lease_seconds <= self.renew_deadline_seconds:
            raise SettingsError(
                f"{ENV['lease_seconds']} ({self.lease_seconds:g}) must be greater than "
                f"{ENV['renew_deadline_seconds']} ({self.renew_deadline_seconds:g})"
            )
        if self.renew_deadline_seconds <= JITTER * self.retry_period_seconds:
            raise SettingsError(
                f"{ENV['renew_deadline_seconds']} ({self.renew_deadline_seconds:g}) must be greater than "
                f"{JITTER:g} x {ENV['retry_period_seconds']} ({self.retry_period_seconds:g})"
            )

    @property
    def webhook_address(self) -> str:
        """Where the API server calls the webhook (the certificate's name)."""
        return self.webhook_host or f"{WEBHOOK_SERVICE}.{self.namespace}.svc"

    @property
    def job_namespace(self) -> str:
        """The namespace of SparkApplication runs: the chart's spark.jobNamespace, else the operator's."""
        return self.spark_job_namespace or self.namespace


# Settings whose empty value means something (no options), not "the default".
MAY_BE_EMPTY = frozenset({"local_analysis_java_options"})


class Count(int):
    """A setting that counts something (at least 1); `int` settings are port numbers."""


_KINDS: dict[str, type] = {
    "resync_seconds": float,
    "poll_seconds": float,
    "admin_idle_seconds": float,
    "reclaim_poll_seconds": float,
    "retry_backoff_seconds": float,
    "kafka_request_timeout_seconds": float,
    "lease_seconds": float,
    "renew_deadline_seconds": float,
    "retry_period_seconds": float,
    "allow_inline_clusters": bool,
    "webhook_port": int,
    "local_analysis_runs": Count,
    "webhook_managed": bool,
    "leader_election": bool,
    "spark_image_pull_secrets": tuple,
}


def _parse(var: str, raw: str, kind: type) -> object:
    if kind is Count:
        if not raw.isdigit() or int(raw) < 1:
            raise SettingsError(f"{var}={raw!r}: expected a whole number of at least 1")
        return int(raw)
    if kind is int:
        if not raw.isdigit() or not 0 < int(raw) < 65536:
            raise SettingsError(f"{var}={raw!r}: expected a port number (1-65535)")
        return int(raw)
    if kind is float:
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if value <= 0:
            raise SettingsError(f"{var}={raw!r}: expected a positive number of seconds")
        return value
    if kind is tuple:
        return tuple(name.strip() for name in raw.split(",") if name.strip())
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            raise SettingsError(f"{var}={raw!r}: expected true or false")
        return raw.lower() == "true"
    return raw
