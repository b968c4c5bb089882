"""The OffsetFetch v8 answer both ways: what the broker writes (`encode`) the operator reads (`decode`) as
the same commits, on the fast fixed-layout path and the slow one alike. Both are checked against
kafka-python's codec (Kafka's JSON spec) in tests/unit/broker/protocol/test_offset_fetch_encoding.py and
tests/unit/operator/kafka/test_offset_fetch.py."""

from __future__ import annotations

import pytest

from ebb_formats.offset_fetch import OffsetFetchDecodeError, Row, TopicCommits, decode, encode

Groups = list[tuple[str, int, list[tuple[str, list[Row]]]]]


def test_what_the_broker_writes_the_operator_reads() -> None:
    groups: Groups = [
        ("fast", 0, [("orders", [(p, 100 + p, -1, "", 0) for p in range(300)])]),  # one fixed layout
        ("slow", 0, [("pay", [(0, 5, 7, "metadata ✓", 0), (1, -1, -1, None, 0), (2, 2**40, 3, "", 0)])]),
        ("denied", 30, []),
        ("half", 0, [("t", [(0, 5, -1, "", 0), (1, -1, -1, "", 87)])]),  # 87: UNSTABLE_OFFSET_COMMIT
        ("empty", 0, []),
    ]
    answer = decode(encode(groups))
    assert answer.throttle_time_ms == 0
    assert answer.commits == {
        "fast": [TopicCommits("orders", list(range(300)), [100 + p for p in range(300)])],
        "slow": [TopicCommits("pay", [0, 2], [5, 2**40])],  # offset -1: no commit, left out
        "empty": [],
    }
    assert answer.errors == {"denied": 30, "half": 87}


@pytest.mark.parametrize("cut", [1, 5, 9, -3, -1])
def test_a_truncated_answer_is_an_error_not_fewer_commits(cut: int) -> None:
    data = encode([("g", 0, [("t", [(0, 5, -1, "m", 0), (1, 6, -1, "", 0)])])])
    with pytest.raises(OffsetFetchDecodeError, match="OffsetFetch v8 answer"):
        decode(data[:cut])
