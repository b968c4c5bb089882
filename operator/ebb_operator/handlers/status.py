"""One status writer for every kind: the Ready condition, observedGeneration, and failures by class.

Status is computed from what was observed and written with one merge patch through the status
subresource (controller-runtime's idiom). kopf applies its own `patch` only after a handler returns;
the handlers write mid-way (a DeleteRecords' plan before it deletes), hence a writer of our own.

A failure's Warning Event is posted once per generation and reason: a refused CompactionConfig resyncs
every minute and a waiting DeleteRecords retries with a backoff, and neither repeats itself in
`kubectl get events` (the Ready condition and the failure metric still reflect every attempt). What was
posted is remembered by the process, per object, because a reconcile may start from a body whose status
does not show yet what the previous one wrote (a new leader may say it once more).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import kopf
from pydantic import ValidationError

from ebb_operator import kube, metrics
from ebb_operator.handlers.errors import reason_of
from ebb_operator.models.common import ConditionStatus, Status, find_condition, set_condition
from ebb_operator.models.messages import CONDITION_MESSAGE, EVENT_MESSAGE, bounded
from ebb_operator.models.reasons import Reason
from ebb_operator.models.validation import explain

S = TypeVar("S", bound=Status)
log = logging.getLogger(__name__)

_REMEMBERED_OBJECTS = 10_000  # objects whose posted Warnings are remembered, the least recent forgotten
_warned: OrderedDict[str, set[tuple[int, str]]] = OrderedDict()  # uid -> (generation, reason) posted


def _warnings_posted(uid: str) -> set[tuple[int, str]]:
    posted = _warned.pop(uid, set())
    _warned[uid] = posted
    while len(_warned) > _REMEMBERED_OBJECTS:
        _warned.popitem(last=False)
    return posted


class StatusWriter(Generic[S]):
    """The status of one object as this reconcile sees it; `write` sends it whole."""

    def __init__(
        self,
        body: kopf.Body,
        resource: kube.Resource,
        status: S,
        *,
        render: Callable[[S], dict[str, Any]] | None = None,
    ) -> None:
        self.body = body
        self.kind = resource.kind
        self.ref = kube.ObjectRef(resource, body.metadata.namespace or "", body.metadata.name or "")
        self.status = status
        self._render = render or (lambda s: s.to_k8s())
        self._warned = _warnings_posted(str(body.metadata.uid or self.ref))

    @property
    def generation(self) -> int:
        return int(self.body.metadata.get("generation") or 1)

    @property
    def ready(self) -> ConditionStatus | None:
        cond = next((c for c in self.status.conditions if c.type == "Ready"), None)
        return cond.status if cond else None

    async def write(self, ready: ConditionStatus, reason: Reason, message: str) -> None:
        self.status.conditions = set_condition(
            self.status.conditions,
            "Ready",
            ready,
            reason,
            bounded(message, CONDITION_MESSAGE),
            self.generation,
        )
        self.status.observed_generation = self.generation
        try:
            await asyncio.to_thread(kube.patch_status, self.ref, self._render(self.status))
        except kube.NotFoundError as exc:
            if not exc.object_missing:
                raise  # its CRD is being updated: kopf retries
            # Deleted while it was being handled: nothing more is done for it (a DeleteRecords whose plan
            # cannot be recorded deletes nothing), and kopf does not retry.
            gone = f"{self.kind} {self.ref.namespace}/{self.ref.name} was deleted"
            raise kopf.PermanentError(gone) from None

    def _said(self, reason: Reason) -> bool:
        """Was this failure already posted for this generation (by this process, or as the Ready condition
        a previous reconcile left)?"""
        ready = find_condition(self.status.conditions, "Ready")
        shown = (
            ready is not None
            and (ready.status, ready.reason) == (ConditionStatus.FALSE, reason)
            and ready.observed_generation == self.generation
        )
        return shown or (self.generation, reason) in self._warned

    async def failed(self, exc: BaseException, *, message: str | None = None) -> Reason:
        """Record a failure: Ready=False with the exception class's reason, a warning Event (once per
        generation and reason), the metric."""
        reason = reason_of(exc)
        if message is None:
            message = explain(exc) if isinstance(exc, ValidationError) else str(exc) or type(exc).__name__
        if reason is Reason.INTERNAL_ERROR:
            log.exception("%s %s/%s: unexpected error", self.kind, self.ref.namespace, self.ref.name)
        said = self._said(reason)
        self._warned.add((self.generation, reason))  # before the write: a concurrent handler sees it
        await self.write(ConditionStatus.FALSE, reason, message)
        if not said:
            kopf.warn(self.body, reason=reason, message=bounded(message, EVENT_MESSAGE))
        metrics.FAILURES.labels(self.kind, reason).inc()
        return reason
