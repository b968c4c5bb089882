"""The chart's default KafkaCluster, applied (server-side apply) after every install and upgrade.

Not a template of the release: on a first install its kind does not exist yet when Helm maps the release's
objects (the CRDs are templates of the same release), which is why 0.1.0 made it a hook that Helm deleted
and recreated on every upgrade. Applied here it keeps its uid and status across upgrades and rollbacks, and
a KafkaCluster 0.1.0 made is taken over as it is. `helm uninstall` leaves it, as it leaves the objects
that name it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ebb_operator import kube
from ebb_operator.models.kafka_cluster import CRD, KafkaClusterSpec

RESOURCE = kube.Resource.ebb(CRD.plural, CRD.kind)
FIELD_MANAGER = "ebb-chart"
# Without `helm --wait` the hook may run before the API server serves the kind the release just installed.
CRD_WAIT_SECONDS = 60.0
log = logging.getLogger(__name__)


def apply(name: str, spec: dict[str, Any], labels: dict[str, str]) -> None:
    """Apply the KafkaCluster `name` with `spec` (checked against the model first: a bad value is an error
    here, with the field named, rather than an object the operator refuses)."""
    checked = KafkaClusterSpec.model_validate(spec)
    body = {
        "apiVersion": RESOURCE.api_version,
        "kind": RESOURCE.kind,
        "metadata": {"name": name, "labels": labels},
        "spec": checked.to_k8s(),
    }
    deadline = time.monotonic() + CRD_WAIT_SECONDS
    while True:
        try:
            applied = kube.apply_object(RESOURCE, body, FIELD_MANAGER)
            break
        except kube.NotFoundError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    log.info("KafkaCluster %s applied (uid %s)", name, applied["metadata"]["uid"])
