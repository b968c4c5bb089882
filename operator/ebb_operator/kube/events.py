"""Events the operator posts outside kopf's handlers (kopf posts those of the objects it reconciles)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from kubernetes import client

from ebb_operator.kube.client import api_client
from ebb_operator.kube.errors import translated
from ebb_operator.kube.resources import ObjectRef


@translated
def post_event(
    about: ObjectRef,
    uid: str,
    reason: str,
    message: str,
    *,
    component: str,
    instance: str,
    warning: bool = False,
    timeout: float = 5.0,
) -> None:
    """A core/v1 Event about an object (in its namespace), as `kubectl describe` and `get events` show."""
    now = datetime.now(UTC)
    namespace = about.namespace
    involved = client.V1ObjectReference(
        api_version=about.resource.api_version,
        kind=about.resource.kind,
        namespace=namespace,
        name=about.name,
        uid=uid or None,
    )
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=f"{about.name}.{uuid.uuid4().hex[:16]}", namespace=namespace),
        involved_object=involved,
        reason=reason,
        message=message[:1024],
        type="Warning" if warning else "Normal",
        source=client.V1EventSource(component=component),
        reporting_component=component,
        reporting_instance=instance[:128],
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    client.CoreV1Api(api_client()).create_namespaced_event(namespace, event, _request_timeout=timeout)
