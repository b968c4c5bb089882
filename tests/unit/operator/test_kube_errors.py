"""A 404 names the object it did not find, or not: the API server answers 404 without naming one for a
custom resource's requests while its CRD is being updated (a helm upgrade re-applies the CRDs), which is
no reason to think the object gone (handlers/status.py stops handling an object only when it is)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes.client import ApiException

from ebb_operator.kube.errors import NotFoundError, translated


def _raising(body: dict[str, object]) -> Callable[[], None]:
    exc = ApiException(status=404, reason="Not Found")
    exc.body = json.dumps(body)

    @translated
    def call() -> None:
        raise exc

    return call


def test_a_missing_object_is_named() -> None:
    body = {
        "kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
        "message": 'deleterecords.ebb.dev "nope" not found',
        "details": {"name": "nope", "group": "ebb.dev", "kind": "deleterecords"},
    }  # fmt: skip
    with pytest.raises(NotFoundError) as caught:
        _raising(body)()
    assert caught.value.object_missing and caught.value.name == "nope"


def test_a_missing_resource_names_no_object() -> None:
    body = {
        "kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
        "message": "the server could not find the requested resource", "details": {},
    }  # fmt: skip
    with pytest.raises(NotFoundError) as caught:
        _raising(body)()
    assert not caught.value.object_missing
