"""`__consumer_offsets` records as the analysis job's rows. The codec is Kafka's format, shared with the
broker (`ebb_formats.consumer_offsets`, tested on records Apache Kafka's own classes wrote in
tests/unit/formats); here: the rows it makes of them, and that a bad record fails with where it was."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ebb_operator.analysis.offsets_records import OffsetsRecordError, decode_row

VECTORS = {
    v["name"]: v
    for v in json.loads(
        (Path(__file__).parents[2] / "formats" / "consumer_offsets_vectors.json").read_text()
    )["vectors"]
}


def s16(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def test_what_kafkas_coordinator_writes_becomes_rows() -> None:
    commit = VECTORS["Kafka's coordinator: a commit"]
    row = decode_row(3, 99, bytes.fromhex(commit["key"]), bytes.fromhex(commit["value"]))
    assert row == ("offset", 3, 99, False, "group-é", "orders", 7, 42, 1_700_000_000_000, 3, *([None] * 5))
    group_key = bytes.fromhex(VECTORS["GroupMetadataKey"]["key"])
    row = decode_row(3, 100, group_key, bytes.fromhex(VECTORS["GroupMetadataValue v3"]["value"]))
    assert row == (
        "group", 3, 100, False, "group-é", None, None, None, None, None,
        "consumer", 3, 2, 1_700_000_000_123, ["orders", "payments"],
    )  # fmt: skip


def test_other_group_kinds_give_no_row() -> None:
    # KIP-848 consumer-group records (type 3+) carry no committed offsets.
    assert decode_row(0, 1, struct.pack(">h", 5) + s16("g"), b"anything") is None


def test_tombstones_become_tombstone_rows() -> None:
    key = struct.pack(">h", 1) + s16("g") + s16("orders") + struct.pack(">i", 0)
    row = decode_row(3, 99, key, None)
    assert row is not None and row[:7] == ("offset", 3, 99, True, "g", "orders", 0)
    row = decode_row(3, 100, struct.pack(">h", 2) + s16("g"), None)
    assert row is not None and row[:5] == ("group", 3, 100, True, "g")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b""),  # no key
        (struct.pack(">h", 1) + s16("g") + s16("orders") + struct.pack(">i", 0), struct.pack(">hq", 3, 42)),
        (struct.pack(">h", 1) + s16("g") + s16("orders") + struct.pack(">i", 0), struct.pack(">hq", 9, 42)),
        (struct.pack(">h", 2) + s16("g"), struct.pack(">h", 3) + s16("consumer") + bytes(3)),
    ],
    ids=["no key", "truncated", "unknown version", "truncated group"],
)
def test_bad_records_fail_loudly_with_their_position(key: bytes | None, value: bytes) -> None:
    with pytest.raises(OffsetsRecordError, match=r"__consumer_offsets-2 offset 17"):
        decode_row(2, 17, key, value)
