"""kopf handlers: one module per kind. `register(settings)` adds the timers whose intervals are
operator settings (the rest register at import, as kopf's decorators do), then takes kopf's finalizer
requirement off every daemon and timer (handlers/lifetime.py: the operator puts no finalizer on objects)."""

from __future__ import annotations

import kopf

from ebb_operator.handlers import (
    compaction_config,
    delete_records,
    kafka_cluster,
    lifetime,
    retention_policy,
    settings,
)
from ebb_operator.models import compaction_config as cc_model
from ebb_operator.models import delete_records as dr_model
from ebb_operator.models import kafka_cluster as kc_model
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.settings import OperatorSettings

__all__ = [
    "compaction_config",
    "delete_records",
    "kafka_cluster",
    "lifetime",
    "register",
    "retention_policy",
    "settings",
]


def register(config: OperatorSettings) -> None:
    """The periodic passes: CompactionConfig drift, KafkaCluster health, DeleteRecords' freed bytes."""
    every = config.resync_seconds
    kopf.timer(
        GROUP,
        VERSION,
        cc_model.CRD.plural,
        id="compactionconfig-resync",
        interval=every,
        initial_delay=every,
        when=lifetime.alive(cc_model.CRD),
    )(
        compaction_config.compactionconfig_resync  # type: ignore[arg-type]  # index kwarg
    )
    kopf.timer(
        GROUP,
        VERSION,
        kc_model.CRD.plural,
        id="kafkacluster-resync",
        interval=every,
        initial_delay=every,
        when=lifetime.alive(kc_model.CRD),
    )(
        kafka_cluster.kafkacluster_resync  # type: ignore[arg-type]  # index kwargs
    )
    kopf.timer(
        GROUP,
        VERSION,
        dr_model.CRD.plural,
        id="deleterecords-reclaimed",
        interval=config.reclaim_poll_seconds,
        when=lifetime.alive(dr_model.CRD),
    )(delete_records.deleterecords_reclaimed)
    lifetime.without_finalizers()
