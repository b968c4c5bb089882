"""Leases (`coordination.k8s.io/v1`): the record of which replica leads (ebb_operator/election.py).

Every write carries the resourceVersion that was read, so the API server refuses (409) a write based on
a record someone else changed since: that is what lets two replicas race for an expired lease and only
one win.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kubernetes import client

from ebb_operator.election import LeaseRecord
from ebb_operator.kube.client import api_client
from ebb_operator.kube.errors import NotFoundError, translated


def _api() -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api_client())


def _micro(at: datetime) -> datetime:
    # The API server parses MicroTime with exactly six fractional digits, and the client writes
    # datetime.isoformat(), which leaves them out when they are all zero.
    return at.replace(microsecond=max(at.microsecond, 1))


def _spec(record: LeaseRecord) -> client.V1LeaseSpec:
    return client.V1LeaseSpec(
        holder_identity=record.holder or None,
        lease_duration_seconds=record.lease_seconds,
        acquire_time=_micro(record.acquired) if record.acquired else None,
        renew_time=_micro(record.renewed) if record.renewed else None,
        lease_transitions=record.transitions,
    )


def _record(lease: client.V1Lease) -> LeaseRecord:
    spec = lease.spec or client.V1LeaseSpec()
    return LeaseRecord(
        holder=spec.holder_identity or "",
        lease_seconds=int(spec.lease_duration_seconds or 0),
        acquired=spec.acquire_time.astimezone(UTC) if spec.acquire_time else None,
        renewed=spec.renew_time.astimezone(UTC) if spec.renew_time else None,
        transitions=int(spec.lease_transitions or 0),
    )


def _version_and_uid(lease: client.V1Lease) -> tuple[str, str]:
    meta = lease.metadata or client.V1ObjectMeta()
    return str(meta.resource_version or ""), str(meta.uid or "")


@translated
def read_lease(namespace: str, name: str, timeout: float) -> tuple[LeaseRecord, str, str] | None:
    """(record, resourceVersion, uid), or None when there is no such Lease."""
    try:
        lease = translated(_api().read_namespaced_lease)(name, namespace, _request_timeout=timeout)
    except NotFoundError:
        return None
    return _record(lease), *_version_and_uid(lease)


@translated
def create_lease(namespace: str, name: str, record: LeaseRecord, timeout: float) -> tuple[str, str]:
    """(resourceVersion, uid) of the Lease created; AlreadyExistsError when another replica was first."""
    body = client.V1Lease(metadata=client.V1ObjectMeta(name=name, namespace=namespace), spec=_spec(record))
    return _version_and_uid(_api().create_namespaced_lease(namespace, body, _request_timeout=timeout))


@translated
def replace_lease(namespace: str, name: str, record: LeaseRecord, version: str, timeout: float) -> str:
    """The new resourceVersion; a KubeApiError with status 409 when the Lease changed since `version`."""
    meta = client.V1ObjectMeta(name=name, namespace=namespace, resource_version=version)
    body = client.V1Lease(metadata=meta, spec=_spec(record))
    lease = _api().replace_namespaced_lease(name, namespace, body, _request_timeout=timeout)
    return _version_and_uid(lease)[0]
