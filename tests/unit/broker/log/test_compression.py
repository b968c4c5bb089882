"""Compression codecs, checked against independent reference encoders (python-snappy, lz4, zstandard,
gzip, and kafka-python's xerial snappy framing, which is what the Java client writes)."""

from __future__ import annotations

import gzip

import lz4.frame
import pytest
import snappy
import zstandard
from kafka.codec import snappy_decode, snappy_encode

from ebb_broker.log.compression import Compression, compress, decompress
from ebb_broker.log.errors import CorruptRecordError

# Larger than one 32 KiB xerial block, and compressible.
DATA = b"".join(b"record-%06d|" % i + bytes(i % 251 for _ in range(40)) for i in range(2_000))


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip(codec: Compression) -> None:
    out = compress(codec, DATA)
    assert decompress(codec, out) == DATA
    assert decompress(codec, memoryview(out)) == DATA
    if codec is not Compression.NONE:
        assert len(out) < len(DATA)


@pytest.mark.parametrize(
    ("codec", "reference"),
    [
        (Compression.GZIP, lambda d: gzip.compress(d)),
        (Compression.SNAPPY, lambda d: snappy.compress(d)),  # a raw block, as librdkafka may write
        (Compression.SNAPPY, lambda d: snappy_encode(d, xerial_compatible=True)),  # the Java client's
        (Compression.LZ4, lambda d: lz4.frame.compress(d)),
        (Compression.ZSTD, lambda d: zstandard.ZstdCompressor().compress(d)),
    ],
)
def test_reads_what_other_producers_write(codec: Compression, reference) -> None:  # type: ignore[no-untyped-def]
    assert decompress(codec, reference(DATA)) == DATA


@pytest.mark.parametrize(
    ("codec", "reference"),
    [
        (Compression.GZIP, gzip.decompress),
        (Compression.SNAPPY, snappy_decode),  # xerial framing, readable by the Java client
        (Compression.LZ4, lz4.frame.decompress),
        (Compression.ZSTD, lambda d: zstandard.ZstdDecompressor().decompress(d, max_output_size=1 << 24)),
    ],
)
def test_what_the_cleaner_rewrites_is_readable_by_other_consumers(codec: Compression, reference) -> None:  # type: ignore[no-untyped-def]
    assert reference(compress(codec, DATA)) == DATA


def test_snappy_output_uses_xerial_framing() -> None:
    assert compress(Compression.SNAPPY, DATA).startswith(b"\x82SNAPPY\x00")


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_garbage_is_a_corrupt_record_not_a_crash(codec: Compression) -> None:
    garbage = b"\x82SNAPPY\x00garbage-not-compressed" if codec is Compression.SNAPPY else b"junk"
    with pytest.raises(CorruptRecordError, match=r"cannot decompress|truncated"):
        decompress(codec, garbage)


def test_truncated_xerial_block_is_refused() -> None:
    whole = compress(Compression.SNAPPY, DATA)
    with pytest.raises(CorruptRecordError, match="truncated xerial"):
        decompress(Compression.SNAPPY, whole[:-10])


def test_unknown_codec_is_refused() -> None:
    with pytest.raises(CorruptRecordError, match="unknown compression codec 6"):
        decompress(6, b"x")
