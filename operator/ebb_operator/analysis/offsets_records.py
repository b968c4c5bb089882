"""`__consumer_offsets` records (key and value bytes) as rows of the analysis job's raw schema.

The codec is Kafka's format, shared with the broker's group coordinator (`ebb_formats.consumer_offsets`:
every version Kafka has written; `ebb_formats.consumer_protocol` for the members' subscriptions). This
module shapes what it decodes into the rows `offsets_source.py` reads in Spark, one per record: a commit
or a classic group's state, or a tombstone of either. Records of other group kinds (KIP-848 consumer,
share and streams groups) carry no committed offsets and give no row.
"""

from __future__ import annotations

from typing import Any

from ebb_formats.consumer_offsets import (
    OFFSETS_TOPIC,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_key,
)
from ebb_formats.consumer_protocol import CONSUMER_PROTOCOL_TYPE, SubscriptionFormatError, subscribed_topics


class OffsetsRecordError(ValueError):
    """A `__consumer_offsets` record that does not follow Kafka's format, with where it was read."""


OFFSET_KIND = "offset"
GROUP_KIND = "group"

RAW_SCHEMA = (
    "kind string, source_partition int, source_offset long, tombstone boolean, "
    "group string, topic string, partition int, committed_offset long, commit_timestamp long, "
    "leader_epoch int, protocol_type string, generation int, members int, state_timestamp long, "
    "subscribed_topics array<string>"
)


def decode_row(partition: int, offset: int, key: bytes | None, value: bytes | None) -> tuple[Any, ...] | None:
    """One `__consumer_offsets` record as a RAW_SCHEMA row; None for record types without offsets."""
    where = f"{OFFSETS_TOPIC}-{partition} offset {offset}"
    if key is None:
        raise OffsetsRecordError(f"{where}: record without a key")
    try:
        k = decode_key(key)
        if isinstance(k, OffsetCommitKey):
            if value is None:
                return (OFFSET_KIND, partition, offset, True, k.group, k.topic, k.partition, *([None] * 8))
            v = OffsetCommitValue.decode(value)
            return (
                OFFSET_KIND, partition, offset, False, k.group, k.topic, k.partition,
                v.offset, v.commit_timestamp, v.leader_epoch, *([None] * 5),
            )  # fmt: skip
        if isinstance(k, GroupMetadataKey):
            if value is None:
                return (GROUP_KIND, partition, offset, True, k.group, *([None] * 10))
            g = GroupMetadataValue.decode(value)
            topics: set[str] = set()
            if g.protocol_type == CONSUMER_PROTOCOL_TYPE:
                for m in g.members:
                    topics.update(subscribed_topics(m.subscription))
            return (
                GROUP_KIND, partition, offset, False, k.group, None, None, None, None, None,
                g.protocol_type, g.generation, len(g.members), g.current_state_timestamp, sorted(topics),
            )  # fmt: skip
        return None
    except (RecordFormatError, SubscriptionFormatError) as e:
        # Fail closed: an unreadable record may be some group's commit, and a plan without it could
        # delete records that group has not read.
        raise OffsetsRecordError(f"{where}: {e}") from e
