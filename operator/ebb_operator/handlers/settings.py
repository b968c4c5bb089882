"""What kopf is told, in one startup handler (kopf docs, configuration)."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from ebb_operator.handlers.runtime import runtime
from ebb_operator.webhook.server import AdmissionServer

# kopf's records on each object, annotations under our own prefix: a handler's progress (retries, delays)
# under `<prefix>/<handler id>`, and, once an object's creation or change is handled, its spec as handled.
ANNOTATION_PREFIX = "ebb.dev"
HANDLED_ANNOTATION = f"{ANNOTATION_PREFIX}/last-handled-configuration"


@kopf.on.startup(id="operator-settings")
def operator_configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # Handler progress goes to annotations under our own prefix, never into our typed status.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.finalizer = "ebb.dev/operator"
    settings.posting.reporting_component = "ebb-operator"
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 300
    settings.networking.request_timeout = 60
    settings.peering.standalone = True
    ebb = runtime(memo).settings
    if ebb.webhook_port is not None:
        settings.admission.server = AdmissionServer(ebb)


@kopf.on.cleanup(id="operator-webhook-withdraw")
def operator_withdraw_webhook(settings: kopf.OperatorSettings, **_: Any) -> None:
    """A ValidatingWebhookConfiguration this process registered (EBB_WEBHOOK_MANAGED) goes with it: left
    behind, its failurePolicy Fail would refuse every tenant object."""
    if isinstance(settings.admission.server, AdmissionServer):
        settings.admission.server.withdraw()


@kopf.on.cleanup(id="operator-cleanup")
def operator_cleanup(memo: kopf.Memo, **_: Any) -> None:
    """Close the cluster connections the operator kept open."""
    runtime(memo).admins.close()
