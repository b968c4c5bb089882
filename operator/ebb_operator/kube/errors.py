"""The API server's refusals, as the operator's own exception types (no client types leak out)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from kubernetes.client import ApiException

P = ParamSpec("P")
T = TypeVar("T")


class KubeApiError(Exception):
    """The API server refused or could not be reached; `status` is the HTTP status (0: no answer), `name`
    the object its answer names (the Status' details), if any."""

    def __init__(self, status: int, reason: str, name: str | None = None) -> None:
        super().__init__(f"{status} {reason}".strip())
        self.status = status
        self.reason = reason
        self.name = name


class NotFoundError(KubeApiError):
    """404: the object (or its kind) does not exist."""

    @property
    def object_missing(self) -> bool:
        """The object is gone, not its kind's endpoint: the API server answers 404 for a custom resource's
        requests for a moment while its CRD is updated (an upgrade's), without naming an object."""
        return self.name is not None


class AlreadyExistsError(KubeApiError):
    """409: on create, an object of that name exists; on a conditional patch, the object changed meanwhile."""


class ForbiddenError(KubeApiError):
    """403: the operator's RBAC does not allow it."""


_BY_STATUS: dict[int, type[KubeApiError]] = {404: NotFoundError, 409: AlreadyExistsError, 403: ForbiddenError}


def _named(exc: ApiException) -> str | None:
    """The object a Status answer names in its details (absent when its resource was not found)."""
    try:
        details = json.loads(exc.body or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return None
    name = details.get("name") if isinstance(details, dict) else None
    return str(name) if name else None


def translated(fn: Callable[P, T]) -> Callable[P, T]:
    """Raise KubeApiError subclasses instead of the client's ApiException."""

    @wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            status = int(exc.status or 0)
            raise _BY_STATUS.get(status, KubeApiError)(status, str(exc.reason or ""), _named(exc)) from exc

    return call
