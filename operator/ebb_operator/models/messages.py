"""How long the messages the operator writes may be, and the one helper that bounds them."""

from __future__ import annotations

CONDITION_MESSAGE = 32768  # metav1.Condition's message: the API server refuses a longer one
# An Event's message (kopf would cut a longer one in the middle; cut at the end, it keeps its start, which
# says what happened), and a RetentionPolicy run's message (a failed run's is its Event's).
EVENT_MESSAGE = 1024
PROGRESS_MESSAGE = 2048  # Ready's message while work goes on: the cause, not a whole trace
PARTITION_MESSAGE = 512  # one partition's retriable error, shown while it is retried


def bounded(text: str, limit: int) -> str:
    """`text`, cut to its first `limit` characters."""
    return text[:limit]
