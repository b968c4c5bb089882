"""OffsetFetch v8+ answers are written to bytes by hand (apis/offset_fetch.py): they must be exactly
what the generated codec writes for the same answer, or clients would misread committed offsets."""

from __future__ import annotations

import pytest

from ebb_broker.protocol.codec import messages_for
from ebb_broker.protocol.encoded import EncodedBody
from ebb_formats.offset_fetch import Row, encode

Groups = list[tuple[str, int, list[tuple[str, list[Row]]]]]

ANSWERS: dict[str, Groups] = {
    "none": [],
    "common layout": [("readers", 0, [("orders", [(p, 30 + p, -1, "", 0) for p in range(3)])])],
    "every field varies": [
        ("g-ü", 0, [
            ("orders", [(0, 5, 7, "checkpoint ✓", 0), (1, -1, -1, "", 0), (2, -1, -1, None, 0)]),
            ("payments", [(0, 2**40, 3, "x" * 300, 0), (1, -1, -1, "", 87)]),  # 87: UNSTABLE_OFFSET_COMMIT
        ]),
        ("denied", 30, []),  # GROUP_AUTHORIZATION_FAILED
        ("empty", 0, []),
    ],
    "past one-byte lengths": [
        (f"group-{g:04}", 0, [(f"topic-{t}", [(p, p * 1000, -1, "", 0) for p in range(200)]) for t in "ab"])
        for g in range(130)
    ],
}  # fmt: skip


def _codec_bytes(version: int, groups: Groups) -> bytes:
    cls = messages_for(9).response[version]
    topic_cls = cls.OffsetFetchResponseGroup.OffsetFetchResponseTopics
    part_cls = topic_cls.OffsetFetchResponsePartitions
    response = cls(
        throttle_time_ms=0,
        groups=[
            cls.OffsetFetchResponseGroup(
                group_id=group,
                error_code=error,
                topics=[
                    topic_cls(
                        name=name,
                        partitions=[
                            part_cls(
                                partition_index=p,
                                committed_offset=o,
                                committed_leader_epoch=e,
                                metadata=m,
                                error_code=c,
                            )
                            for p, o, e, m, c in rows
                        ],
                    )
                    for name, rows in topics
                ],
            )
            for group, error, topics in groups
        ],
    )
    response.with_header(correlation_id=42)
    return bytes(response.encode(header=True, framed=True))


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("case", list(ANSWERS))
def test_hand_written_answer_is_byte_for_byte_the_codecs(version: int, case: str) -> None:
    groups = ANSWERS[case]
    ours = EncodedBody(encode(groups), flexible=True).framed(42)
    assert ours == _codec_bytes(version, groups)
    # and the codec reads it back as the same answer
    decoded = messages_for(9).response[version].decode(ours, header=True, framed=True)
    assert [(g.group_id, g.error_code, len(g.topics)) for g in decoded.groups] == [
        (g, e, len(t)) for g, e, t in groups
    ]
