"""Operator settings: everything kopf is told, in one startup handler (kopf docs, configuration)."""

from __future__ import annotations

import logging
import os
from typing import Any

import kopf

# How often CompactionConfigs are re-applied (drift correction, topics created later). A timer's
# interval is fixed when its handler is registered, so it comes from the environment, not the handler.
RESYNC_SECONDS = float(os.environ.get("EBB_RESYNC_SECONDS", "60"))


@kopf.on.startup(id="operator-settings")
def operator_configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Handler progress goes to annotations under our own prefix, never into our typed status.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="ebb.dev")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="ebb.dev")
    settings.persistence.finalizer = "ebb.dev/operator"
    settings.posting.reporting_component = "ebb-operator"
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 300
    settings.networking.request_timeout = 60
    settings.peering.standalone = True
