"""Which segments a retention pass may delete (Kafka's UnifiedLog.deletableSegments and its predicates).

The walk goes from the oldest segment and stops at the first one that fails, so deletion is always a
prefix; a segment is taken only if the high watermark is at or above its upper bound (next segment's base,
or the log end for the last one), and a final empty segment is never taken.

Predicates, in the order a pass applies them (policy ``delete``; a compact-only log gets only the first):

* log start offset breach: the next segment starts at or below the log start offset (DeleteRecords, KIP-107),
  or (Ebb) the log start offset reached the log end, so even the active segment is unreachable;
* consumed retention (KIP-68): older than ``retention.commitoffset.ms`` and wholly below the committed
  offset of every group the topic's ``retention.commitoffset.groups`` names; skipped when the
  committed offsets are not known yet, no group is named, a named group has no commit on the partition,
  or a named group's commit lies past the log end (it proves no reading: any offset may be committed);
* size: delete the oldest while the log stays at or above ``retention.bytes`` without them;
* time: ``now - largest timestamp > retention.ms``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ebb_broker.log.segment import Segment

Predicate = Callable[[Segment, Segment | None], bool]


@dataclass(frozen=True)
class CommittedOffsets:
    """KIP-68's input: an immutable snapshot of the committed offsets of the groups consumed retention
    counts (those some topic's ``retention.commitoffset.groups`` names), per group and partition.

    The rule (docs/log-engine.md, "Who owns what"): the event loop owns the group coordinator's state;
    it takes this snapshot there and hands it to the retention pass, which runs in a worker thread and
    so never reads state the loop is changing. ``known=False`` (the coordinator has not loaded
    ``__consumer_offsets`` yet) makes every partition skip consumed retention, fail closed.
    """

    by_group: Mapping[str, Mapping[tuple[str, int], int]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    known: bool = True

    def __post_init__(self) -> None:
        frozen = {g: MappingProxyType(dict(offsets)) for g, offsets in self.by_group.items()}
        object.__setattr__(self, "by_group", MappingProxyType(frozen))

    def consumed_up_to(
        self, topic: str, partition: int, groups: Iterable[str], log_end_offset: int
    ) -> int | None:
        """The offset below which every one of ``groups`` has read the partition, or None when that is
        not known to be anything: the snapshot is unknown, no group is named, a group has no commit
        there, or a commit lies past ``log_end_offset`` (a stale commit of a deleted topic, or one made
        up by a client: the commit path accepts any offset, as Kafka's does)."""
        if not self.known:
            return None
        offsets = [self.by_group.get(g, {}).get((topic, partition)) for g in groups]
        if not offsets or None in offsets:
            return None
        present = [o for o in offsets if o is not None]
        if max(present) > log_end_offset:
            return None
        return min(present)


class RetentionReason(enum.Enum):
    LOG_START_OFFSET_BREACH = "log-start-offset-breach"
    CONSUMED = "consumed"  # KIP-68
    SIZE = "retention-bytes"
    TIME = "retention-ms"


@dataclass
class RetentionResult:
    """What one retention pass over one log deleted."""

    segments: int = 0
    bytes: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    consumed_skipped: bool = False  # KIP-68 wanted to run but the committed offsets were unknown

    def add(self, reason: RetentionReason, segments: Sequence[Segment]) -> None:
        if segments:
            self.segments += len(segments)
            self.bytes += sum(s.size for s in segments)
            self.by_reason[reason.value] = self.by_reason.get(reason.value, 0) + len(segments)


def deletable_segments(
    segments: Sequence[Segment], log_end_offset: int, high_watermark: int, predicate: Predicate
) -> list[Segment]:
    """The longest prefix of ``segments`` that ``predicate`` accepts, bounded by the high watermark."""
    out: list[Segment] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else log_end_offset
        last_and_empty = nxt is None and seg.size == 0
        if high_watermark >= upper and not last_and_empty and predicate(seg, nxt):
            out.append(seg)
        else:
            break
    return out


def start_offset_breach(log_start_offset: int, log_end_offset: int) -> Predicate:
    """Kafka: the next segment starts at or below the log start offset. Ebb also takes the last segment
    once the log start offset reached the log end (DeleteRecords -1): Kafka would keep it until it rolls,
    holding disk that no reader can reach; the pass rolls first, as for any all-deletable log."""

    def pred(seg: Segment, nxt: Segment | None) -> bool:
        if nxt is None:
            return seg.size > 0 and log_start_offset >= log_end_offset
        return nxt.base_offset <= log_start_offset

    return pred


def time_breach(now_ms: int, retention_ms: int) -> Predicate:
    return lambda seg, nxt: retention_ms >= 0 and now_ms - seg.largest_timestamp > retention_ms


def size_breach(total_size: int, retention_bytes: int) -> Predicate:
    diff = total_size - retention_bytes

    def pred(seg: Segment, nxt: Segment | None) -> bool:
        nonlocal diff
        if retention_bytes < 0 or total_size < retention_bytes:
            return False
        if diff - seg.size >= 0:
            diff -= seg.size
            return True
        return False

    return pred


def consumed_breach(now_ms: int, commitoffset_ms: int, consumed: int, log_end_offset: int) -> Predicate:
    """KIP-68: old enough AND every record of the segment is below ``consumed`` (every counted group's
    committed offset)."""

    def pred(seg: Segment, nxt: Segment | None) -> bool:
        upper = nxt.base_offset if nxt is not None else log_end_offset
        return now_ms - seg.largest_timestamp > commitoffset_ms and upper <= consumed

    return pred
