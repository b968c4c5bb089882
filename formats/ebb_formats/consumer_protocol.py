"""The consumer protocol's subscription (Kafka's ConsumerProtocolSubscription): the topics a member of a
classic group of protocol type "consumer" subscribed to, from its JoinGroup metadata (which the group
coordinator keeps in its GroupMetadataValue).

Layout (never flexible): version int16, topics array of strings (int32 count, int16 length + UTF-8 each),
then fields newer versions add (userData, ownedPartitions, generationId, rackId). Kafka parses a newer
version with the fields it knows, so only the topics are read here, whatever the version.
"""

from __future__ import annotations

import struct

CONSUMER_PROTOCOL_TYPE = "consumer"

_HEAD = struct.Struct(">hi")
_I16 = struct.Struct(">h")


class SubscriptionFormatError(ValueError):
    """Metadata that is not a ConsumerProtocolSubscription (truncated, or a topic that is not UTF-8)."""


def subscribed_topics(metadata: bytes) -> list[str]:
    """The subscription's topics, in order; a negative count is none, as Kafka's reader takes it."""
    if len(metadata) < _HEAD.size:
        raise SubscriptionFormatError(f"{len(metadata)} bytes hold no subscription")
    _version, count = _HEAD.unpack_from(metadata, 0)
    pos = _HEAD.size
    topics: list[str] = []
    for _ in range(max(count, 0)):
        if pos + 2 > len(metadata):
            raise SubscriptionFormatError(f"subscription truncated at byte {pos}")
        (n,) = _I16.unpack_from(metadata, pos)
        pos += 2
        if n < 0 or pos + n > len(metadata):
            raise SubscriptionFormatError(f"topic {len(topics)} of the subscription has length {n}")
        try:
            topics.append(metadata[pos : pos + n].decode())
        except UnicodeDecodeError as exc:
            raise SubscriptionFormatError(f"topic {len(topics)} of the subscription is not UTF-8") from exc
        pos += n
    return topics
