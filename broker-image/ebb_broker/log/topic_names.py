"""Topic names: which are legal and which collide (Kafka's ``org.apache.kafka.common.internals.Topic``).

A name becomes a directory (``<topic>-<partition>``) and a whitespace-separated field of the checkpoint
files, so the rule is applied to the whole string, character by character (a regular expression's ``$``
also matches before a final newline: ``"evil\\n"`` once passed and then broke every checkpoint). Every
place a name enters the broker checks it (CreateTopics, Metadata auto-creation, the engine's
``create_topics``), and loading a data directory checks it again.

Collisions (KAFKA-13743, Kafka's ``ReplicationControlManager``): metric names turn ``.`` into ``_``, so a
topic may not be created when another one differs from it only there (``a.b`` and ``a_b``). Colliding
names already on disk are kept, as Kafka keeps them ("grandfathered").
"""

from __future__ import annotations

import string

MAX_LENGTH = 249
_LEGAL = frozenset(string.ascii_letters + string.digits + "._-")


def invalid_reason(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's ``Topic.validate`` messages), or None when it is."""
    if name is None or name == "":
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_LENGTH:
        return f"Topic name is invalid: {len(name)} characters, more than the max allowed length {MAX_LENGTH}"
    if not _LEGAL.issuperset(name):
        return (
            f"Topic name is invalid: {name!r} contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def collision_key(name: str) -> str:
    """Kafka's ``Topic.unifyCollisionChars``: two names with the same key collide."""
    return name.replace(".", "_")
