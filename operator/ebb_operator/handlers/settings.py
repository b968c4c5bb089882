"""What kopf is told, in one startup handler (kopf docs, configuration)."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from ebb_operator.handlers.runtime import runtime


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


@kopf.on.cleanup(id="operator-cleanup")
def operator_cleanup(memo: kopf.Memo, **_: Any) -> None:
    """Close the cluster connections the operator kept open."""
    runtime(memo).admins.close()
