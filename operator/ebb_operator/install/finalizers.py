"""Take Ebb's finalizer off every Ebb object, so that deleting one (or its namespace) never waits for an
operator that is being uninstalled. The operator itself puts none on objects (handlers/lifetime.py); this
clears what an earlier version, or one rolled back to, left."""

from __future__ import annotations

import logging

from ebb_operator import kube
from ebb_operator.models import ALL_CRDS

FINALIZER = "ebb.dev/operator"
_ATTEMPTS = 5
log = logging.getLogger(__name__)


def release(finalizer: str = FINALIZER) -> int:
    """The number of objects released. Each patch is conditional on the object's resourceVersion, and
    retried on a conflict with a fresh read."""
    released = 0
    for crd in ALL_CRDS:
        resource = kube.Resource.ebb(crd.plural, crd.kind)
        for obj in kube.list_objects(resource):
            meta = obj["metadata"]
            ref = kube.ObjectRef(resource, meta.get("namespace", ""), meta["name"])
            for _ in range(_ATTEMPTS):
                finalizers = meta.get("finalizers") or []
                if finalizer not in finalizers:
                    break
                patch = {
                    "metadata": {
                        "finalizers": [f for f in finalizers if f != finalizer],
                        "resourceVersion": meta["resourceVersion"],
                    }
                }
                try:
                    kube.patch_object(ref, patch)
                except kube.AlreadyExistsError:  # 409: changed meanwhile, read it again
                    meta = kube.get_object(ref)["metadata"]
                    continue
                except kube.NotFoundError:
                    break
                released += 1
                log.info("%s %s/%s: finalizer %s removed", crd.kind, ref.namespace, ref.name, finalizer)
                break
            else:
                raise RuntimeError(f"{crd.kind} {ref.namespace}/{ref.name}: still changing, finalizer kept")
    return released
