"""The operator registers no handler for which kopf would put its finalizer on objects, and every daemon and
timer matches only objects kopf's watch still sees (handlers/lifetime.py)."""

from __future__ import annotations

from types import SimpleNamespace

import kopf

from ebb_operator import handlers
from ebb_operator.handlers import lifetime
from ebb_operator.models import ALL_CRDS
from ebb_operator.models.retention_policy import CRD as RP_CRD
from ebb_operator.settings import OperatorSettings


def test_no_handler_holds_objects_with_a_finalizer() -> None:
    registry = kopf.get_default_registry()
    handlers.register(OperatorSettings())
    spawning = registry._spawning.get_all_handlers()
    assert {str(h.id) for h in spawning} == {
        "retentionpolicy-runner",
        "compactionconfig-resync",
        "kafkacluster-resync",
        "deleterecords-reclaimed",
    }
    assert lifetime.finalizer_holders() == []
    # Each ends with its object: matched only while the object is in the index of live objects. kopf types
    # `when` as a callable; lifetime.alive's filters are functions, named for what they match.
    assert all(getattr(h.when, "__name__", "").endswith("_present") for h in spawning)
    assert {f"{crd.singular}_live" for crd in ALL_CRDS} <= {
        str(h.id) for h in registry._indexing.get_all_handlers()
    }


def test_the_filter_follows_the_index_of_live_objects() -> None:
    present = lifetime.alive(RP_CRD)
    body = SimpleNamespace(metadata=SimpleNamespace(uid="u-1"))
    assert present(body, retentionpolicy_live={"u-1": True})
    assert not present(body, retentionpolicy_live={"u-2": True})
