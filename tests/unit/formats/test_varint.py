"""Kafka's varints: zig-zag (record batches) and unsigned (flexible versions), against kafka-python's
codec, which implements Kafka's ByteUtils independently."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32
from kafka.record.util import encode_varint

from ebb_formats.varint import (
    VarintError,
    compact_string,
    read_compact_length,
    read_uvarint,
    read_varint,
    skip_tagged_fields,
    uvarint,
    write_varint,
)

LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(LONG)
def test_zigzag_round_trip(value: int) -> None:
    out = bytearray()
    write_varint(out, value)
    assert read_varint(bytes(out) + b"tail", 0) == (value, len(out))


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_zigzag_bytes_are_kafkas(value: int) -> None:
    ours = bytearray()
    write_varint(ours, value)
    theirs = bytearray()
    encode_varint(value, theirs.append)
    assert bytes(ours) == bytes(theirs)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_unsigned_bytes_are_kafkas(value: int) -> None:
    assert uvarint(value) == UnsignedVarInt32.encode(value)
    assert read_uvarint(uvarint(value), 0) == (value, len(uvarint(value)))


def test_a_varint_longer_than_ten_bytes_is_refused_and_a_cut_one_is_an_index_error() -> None:
    with pytest.raises(VarintError, match="varint is too long"):
        read_varint(b"\xff" * 11, 0)
    with pytest.raises(VarintError, match="varint is too long"):
        read_uvarint(b"\xff" * 11, 0)
    with pytest.raises(IndexError):
        read_varint(b"\xff\xff", 0)


def test_compact_strings_and_tagged_fields() -> None:
    assert compact_string(None) == b"\x00" and compact_string("ab") == b"\x03ab"
    assert read_compact_length(b"\x00", 0) == (-1, 1)
    assert read_compact_length(b"\x03ab", 0) == (2, 1)
    # Two tagged fields (tag 0, 2 bytes; tag 5, 1 byte), then the next field.
    data = b"\x02\x00\x02ab\x05\x01c" + b"next"
    assert data[skip_tagged_fields(data, 0) :] == b"next"
    with pytest.raises(IndexError):
        skip_tagged_fields(b"\x01\x00\x05ab", 0)
