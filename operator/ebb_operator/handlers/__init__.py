"""kopf handlers: one module per kind. `register(settings)` adds the timers whose intervals are
operator settings and, with the webhook on, the admission handlers (the rest register at import, as kopf's
decorators do)."""

from __future__ import annotations

import kopf

from ebb_operator.handlers import (
    admission,
    compaction_config,
    delete_records,
    kafka_cluster,
    retention_policy,
    settings,
)
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.settings import OperatorSettings

__all__ = [
    "admission",
    "compaction_config",
    "delete_records",
    "kafka_cluster",
    "register",
    "retention_policy",
    "settings",
]


def register(config: OperatorSettings) -> None:
    """The periodic passes: CompactionConfig drift, KafkaCluster health, DeleteRecords' freed bytes."""
    every = config.resync_seconds
    kopf.timer(
        GROUP, VERSION, "compactionconfigs", id="compactionconfig-resync", interval=every, initial_delay=every
    )(
        compaction_config.compactionconfig_resync  # type: ignore[arg-type]  # index kwarg
    )
    kopf.timer(
        GROUP, VERSION, "kafkaclusters", id="kafkacluster-resync", interval=every, initial_delay=every
    )(
        kafka_cluster.kafkacluster_resync  # type: ignore[arg-type]  # index kwargs
    )
    kopf.timer(
        GROUP, VERSION, "deleterecords", id="deleterecords-reclaimed", interval=config.reclaim_poll_seconds
    )(delete_records.deleterecords_reclaimed)
    if config.webhook_port is not None:
        admission.register()
