"""Kafka's `__transaction_state` record format: the transaction coordinator's keys and values.

The schemas are Kafka's TransactionLogKey (v0: the transactional id) and TransactionLogValue. Ebb writes
value version 0 (not flexible), which every Kafka tool reads (`kafka-dump-log --transaction-log-decoder`):
producer id, producer epoch, transaction timeout, status (Kafka's TransactionState ids), the partitions of
the ongoing transaction, last update and start timestamps. A null value is a tombstone (an expired
transactional id).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from ebb_formats.consumer_offsets import RecordFormatError

TRANSACTION_STATE_TOPIC = "__transaction_state"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TxnState(enum.IntEnum):
    """Kafka's TransactionState, by the id it is stored under."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report (Kafka's TransactionState.name)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


@dataclass(frozen=True)
class TxnKey:
    transactional_id: str

    def encode(self) -> bytes:
        raw = self.transactional_id.encode()
        return _I16.pack(0) + _I16.pack(len(raw)) + raw

    @classmethod
    def decode(cls, data: bytes) -> TxnKey:
        try:
            (version,) = _I16.unpack_from(data, 0)
            if version != 0:
                raise RecordFormatError(f"TransactionLogKey version {version}")
            (n,) = _I16.unpack_from(data, 2)
            if n < 0 or 4 + n > len(data):
                raise RecordFormatError("truncated TransactionLogKey")
            return cls(data[4 : 4 + n].decode())
        except (struct.error, UnicodeDecodeError) as exc:
            raise RecordFormatError(f"unreadable TransactionLogKey: {exc}") from None


@dataclass(frozen=True)
class TxnValue:
    """TransactionLogValue v0."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1

    def encode(self) -> bytes:
        out = bytearray(_I16.pack(0))
        out += _I64.pack(self.producer_id) + _I16.pack(self.producer_epoch) + _I32.pack(self.timeout_ms)
        out += bytes([self.state])
        out += _I32.pack(len(self.partitions))
        for topic, ids in sorted(self.partitions.items()):
            raw = topic.encode()
            out += _I16.pack(len(raw)) + raw + _I32.pack(len(ids))
            for p in sorted(ids):
                out += _I32.pack(p)
        out += _I64.pack(self.last_update_ms) + _I64.pack(self.start_ms)
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> TxnValue:
        try:
            pos = 0

            def take(s: struct.Struct) -> int:
                nonlocal pos
                (v,) = s.unpack_from(data, pos)
                pos += s.size
                return int(v)

            version = take(_I16)
            if version != 0:
                raise RecordFormatError(f"TransactionLogValue version {version} (Ebb writes 0)")
            pid, epoch, timeout = take(_I64), take(_I16), take(_I32)
            state = TxnState(data[pos])
            pos += 1
            partitions: dict[str, list[int]] = {}
            for _ in range(max(take(_I32), 0)):
                n = take(_I16)
                topic = data[pos : pos + n].decode()
                pos += n
                partitions[topic] = [take(_I32) for _ in range(take(_I32))]
            return cls(pid, epoch, timeout, state, partitions, take(_I64), take(_I64))
        except (struct.error, IndexError, ValueError) as exc:
            if isinstance(exc, RecordFormatError):
                raise
            raise RecordFormatError(f"unreadable TransactionLogValue: {exc}") from None
