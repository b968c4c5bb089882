"""Per-object background work (kopf daemons and timers) that ends with its object, without a finalizer.

kopf 1.45 declares every daemon and timer `requires_finalizer=True` (kopf/on.py) and, while any matches an
object, keeps its finalizer on it (`settings.persistence.finalizer`, kopf/_core/reactor/processing.py), so
that it can stop them once the object's deletion has begun (a deletionTimestamp) and only then let it go.
With the operator not running (uninstalled, scaled to zero, crash-looping), that finalizer holds every
RetentionPolicy, CompactionConfig, DeleteRecords and KafkaCluster, and a namespace being deleted with
them, for good.

Ebb's daemons and timers need no last word: nothing is cleaned up outside the API server (what a
RetentionPolicy creates goes with it through ownerReferences). They only must not run on after their
object is gone. So they are registered here without the finalizer requirement, and each matches only the
objects present in a kopf index of live objects (`when=`): kopf removes a deleted object from its
indexes before it processes the DELETED event (kopf/_core/engines/indexing.py), finds the handler no
longer matching and stops it (kopf/_core/engines/daemons.py `match_daemons`: signalled, a daemon with
a cancellation_timeout and no backoff cancelled at once), as it would have on a deletionTimestamp.
With no handler requiring it, kopf also removes the finalizer an earlier Ebb put on an object, at its first
look at it after the upgrade.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import kopf

from ebb_operator.models import ALL_CRDS
from ebb_operator.models.common import GROUP, VERSION
from ebb_operator.models.crd import CrdInfo

AliveFilter = Callable[..., bool]


def _index_id(crd: CrdInfo) -> str:
    return f"{crd.singular}_live"


def _live(uid: str | None, **_: Any) -> dict[str, bool]:
    return {uid: True} if uid else {}


for _crd in ALL_CRDS:
    kopf.index(GROUP, VERSION, _crd.plural, id=_index_id(_crd))(_live)


def alive(crd: CrdInfo) -> AliveFilter:
    """A `when=` filter: the object is still in the API server (as far as kopf's watch has told)."""
    index_id = _index_id(crd)

    def present(body: kopf.Body, **kwargs: Any) -> bool:
        index: kopf.Index[str, bool] = kwargs[index_id]
        return str(body.metadata.uid) in index

    present.__name__ = f"{crd.singular}_present"
    return present


def without_finalizers(registry: kopf.OperatorRegistry | None = None) -> None:
    """Drop kopf's finalizer requirement from every daemon and timer registered so far (call it after
    the last registration). kopf offers no per-handler option for it: its handlers are frozen dataclasses
    held in the registry, replaced here field for field."""
    spawning = (registry or kopf.get_default_registry())._spawning
    spawning._handlers = [dataclasses.replace(h, requires_finalizer=False) for h in spawning._handlers]


def finalizer_holders(registry: kopf.OperatorRegistry | None = None) -> list[str]:
    """The handlers for which kopf would put its finalizer on objects (the operator has none)."""
    reg = registry or kopf.get_default_registry()
    spawning = [str(h.id) for h in reg._spawning.get_all_handlers() if h.requires_finalizer]
    changing = [str(h.id) for h in reg._changing.get_all_handlers() if h.requires_finalizer]
    return sorted(spawning + changing)
