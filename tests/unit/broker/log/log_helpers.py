"""Helpers for the log engine tests (Kafka's LogTestUtils): a settable clock, batches, reading back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ebb_broker.log.log import Log
from ebb_broker.log.records import NewRecord, build_batch, decode_records, iter_headers

T0 = 1_700_000_000_000


class Clock:
    """A manual millisecond clock."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def batch(
    *values: bytes | None,
    key: bytes | None = None,
    keys: Sequence[bytes | None] | None = None,
    ts: int = T0,
    **kw: object,
) -> bytes:
    """A produced batch of ``values`` (keyed by ``key`` or ``keys``) with timestamp ``ts``."""
    keys = keys if keys is not None else [key] * len(values)
    return build_batch([NewRecord(k, v, timestamp=ts) for k, v in zip(keys, values, strict=True)], **kw)  # type: ignore[arg-type]


def read_all(lg: Log, start: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every visible record as (offset, key, value), read through Log.read like a consumer."""
    offset = lg.log_start_offset if start is None else start
    out: list[tuple[int, bytes | None, bytes | None]] = []
    while offset < lg.high_watermark:
        data = lg.read(offset, 1 << 20).to_bytes()
        progressed = False
        view = memoryview(data)
        pos = 0
        while pos + 61 <= len(data):
            from ebb_formats.record_batch import read_header

            h = read_header(view, pos)
            if pos + h.size > len(data):
                break
            for r in decode_records(view[pos : pos + h.size], h):
                if r.offset >= offset:
                    out.append((r.offset, r.key, r.value))
            offset = max(offset, h.next_offset)
            progressed = True
            pos += h.size
        assert progressed, f"no progress reading at {offset}"
    return out


def headers_of(path: Path) -> list[object]:
    return [h for _p, h in iter_headers(path.read_bytes())]
