"""kopf handlers: one module per kind. `register(settings)` adds the timers whose intervals are
operator settings and, with the webhook on, the admission handlers (the rest register at import, as kopf's
decorators do), then takes kopf's finalizer requirement off every daemon and timer (handlers/lifetime.py:
the operator puts no finalizer on objects)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf

from ebb_operator.handlers import (
    admission,
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
from ebb_operator.models.crd import CrdInfo
from ebb_operator.settings import OperatorSettings

__all__ = [
    "admission",
    "compaction_config",
    "delete_records",
    "kafka_cluster",
    "lifetime",
    "register",
    "retention_policy",
    "settings",
]


def _periodic(
    crd: CrdInfo, handler_id: str, fn: Callable[..., Any], interval: float, delay: float = 0
) -> None:
    """A timer for each object of `crd`, ending with its object (handlers/lifetime.py)."""
    timer = kopf.timer(
        GROUP,
        VERSION,
        crd.plural,
        id=handler_id,
        interval=interval,
        initial_delay=delay,
        when=lifetime.alive(crd),
    )
    timer(fn)


def register(config: OperatorSettings) -> None:
    """The periodic passes: CompactionConfig drift, KafkaCluster health, DeleteRecords' freed bytes."""
    every = config.resync_seconds
    _periodic(
        cc_model.CRD, "compactionconfig-resync", compaction_config.compactionconfig_resync, every, every
    )
    _periodic(kc_model.CRD, "kafkacluster-resync", kafka_cluster.kafkacluster_resync, every, every)
    _periodic(
        dr_model.CRD,
        "deleterecords-reclaimed",
        delete_records.deleterecords_reclaimed,
        config.reclaim_poll_seconds,
    )
    if config.webhook_port is not None:
        admission.register()
    lifetime.without_finalizers()
