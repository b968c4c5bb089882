"""The kafka-dump-log parser splits keys and values by their printed sizes, so text that looks like the
format's own markers stays inside the record it belongs to (the compat tests rely on exact records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.dump_log import DumpLogParseError, parse_dump

# Lines in the shape Apache Kafka 4.3's DumpLogSegments prints with --deep-iteration --print-data-log.
DUMP = """\
Dumping /data/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 \
partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong[1700000086400] \
position: 0 CreateTime: 1700000000002 size: 150 magic: 2 compresscodec: lz4 crc: 12345 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 12 valueSize: 4 sequence: -1 headerKeys: [h1,h2] \
key: k payload: x payload: é v
| offset: 1 CreateTime: 1700000000001 keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] key: tomb
| offset: 2 CreateTime: 1700000000002 keySize: -1 valueSize: 0 sequence: -1 headerKeys: [] payload: \n\
"""


def test_keys_and_values_are_cut_by_their_sizes() -> None:
    (segment,) = parse_dump(DUMP)
    assert segment.file == Path("/data/t-0/00000000000000000000.log")
    (batch,) = segment.batches
    assert (batch.codec, batch.crc_valid, batch.delete_horizon_ms, batch.max_timestamp) == (
        "lz4",
        True,
        1700000086400,
        1700000000002,
    )
    assert [(r.offset, r.key, r.value, r.header_keys) for r in batch.records] == [
        (0, "k payload: x", "é v", ("h1", "h2")),
        (1, "tomb", None, ()),
        (2, None, "", ()),
    ]


def test_a_record_line_that_disagrees_with_its_sizes_is_an_error() -> None:
    broken = DUMP.replace("keySize: 4 valueSize: -1", "keySize: 4 valueSize: 3")
    with pytest.raises(DumpLogParseError, match="expected a payload"):
        parse_dump(broken)
