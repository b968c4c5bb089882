"""Run Kafka's `kafka-dump-log` (DumpLogSegments) on segment files and parse what it prints.

The parser follows the text format of Apache Kafka 4.x's DumpLogSegments with --deep-iteration and
--print-data-log: a `baseOffset: ...` line per batch, then one `| offset: ...` line per record whose
`key:` and `payload:` are printed only when present (keySize/valueSize -1 means null). With
--offsets-decoder the key and payload of `__consumer_offsets` records are JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.kafka import kafka_tool

_FIELD = re.compile(r"(\w+): (\S+)")
_INDEX_ENTRY = re.compile(r"^offset: (?P<offset>\d+) position: (?P<position>\d+)$")
_TIME_INDEX_ENTRY = re.compile(r"^timestamp: (?P<timestamp>-?\d+) offset: (?P<offset>\d+)$")
_RECORD = re.compile(
    r"^\| offset: (?P<offset>\d+) (?P<ts_type>CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+)"
    r" keySize: (?P<key_size>-?\d+) valueSize: (?P<value_size>-?\d+) sequence: (?P<seq>-?\d+)"
    r" headerKeys: \[(?P<headers>[^\]]*)\](?P<rest>.*)$"
)


@dataclass(frozen=True)
class DumpedRecord:
    offset: int
    timestamp: int
    timestamp_type: str
    key: str | None
    value: str | None
    header_keys: tuple[str, ...]
    sequence: int


@dataclass
class DumpedBatch:
    """One record batch as DumpLogSegments describes it (its header fields, and its records)."""

    file: Path
    base_offset: int
    last_offset: int
    count: int
    codec: str
    crc_valid: bool
    timestamp_type: str
    max_timestamp: int
    is_control: bool
    producer_id: int
    delete_horizon_ms: int | None
    position: int
    records: list[DumpedRecord] = field(default_factory=list)


@dataclass
class DumpedSegment:
    """One dumped file: batches of a `.log`, or the entries of a `.index`/`.timeindex`. (DumpLogSegments
    reports index entries that disagree with their log on stderr: "Mismatches in :FILE".)"""

    file: Path
    batches: list[DumpedBatch] = field(default_factory=list)
    index_entries: list[tuple[int, int]] = field(default_factory=list)  # (offset, position)
    time_index_entries: list[tuple[int, int]] = field(default_factory=list)  # (timestamp, offset)

    @property
    def records(self) -> list[DumpedRecord]:
        return [r for b in self.batches for r in b.records]


class DumpLogParseError(ValueError):
    """DumpLogSegments printed a line this parser does not know: the format changed or the file is bad."""


def _split_key_value(rest: str, key_size: int, value_size: int) -> tuple[str | None, str | None]:
    """Cut ` key: K payload: V` by the printed byte sizes, so keys containing `payload:` stay intact."""
    data = rest.encode()
    key: str | None = None
    if key_size >= 0:
        if not data.startswith(b" key: "):
            raise DumpLogParseError(f"expected a key in {rest!r}")
        data = data[len(b" key: ") :]
        key, data = data[:key_size].decode(), data[key_size:]
    value: str | None = None
    if value_size >= 0:
        if not data.startswith(b" payload: "):
            raise DumpLogParseError(f"expected a payload in {rest!r}")
        value, data = data[len(b" payload: ") :].decode(), b""
    if data.strip():
        raise DumpLogParseError(f"unexpected trailing text {data!r}")
    return key, value


def parse_dump(text: str, *, sized: bool = True) -> list[DumpedSegment]:
    """Parse DumpLogSegments output. `sized=False` for --offsets-decoder, whose key/payload are decoded JSON
    (not the raw bytes that keySize/valueSize count), so they are split on the ` payload: ` marker."""
    segments: list[DumpedSegment] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            segments.append(DumpedSegment(Path(line.removeprefix("Dumping ").strip())))
        elif line.startswith("baseOffset: "):
            if not segments:
                raise DumpLogParseError(f"batch before any file: {line!r}")
            f = dict(_FIELD.findall(line))
            ts_type = "LogAppendTime" if "LogAppendTime" in f else "CreateTime"
            horizon = re.search(r"deleteHorizonMs: OptionalLong(?:\[(\d+)\]|\.empty)", line)
            segments[-1].batches.append(
                DumpedBatch(
                    file=segments[-1].file,
                    base_offset=int(f["baseOffset"]),
                    last_offset=int(f["lastOffset"]),
                    count=int(f["count"]),
                    codec=f["compresscodec"],
                    crc_valid=f.get("isvalid", f.get("crcValid")) == "true",
                    timestamp_type=ts_type,
                    max_timestamp=int(f[ts_type]),
                    is_control=f["isControl"] == "true",
                    producer_id=int(f["producerId"]),
                    delete_horizon_ms=int(horizon.group(1)) if horizon and horizon.group(1) else None,
                    position=int(f["position"]),
                )
            )
        elif m := _INDEX_ENTRY.match(line):
            segments[-1].index_entries.append((int(m["offset"]), int(m["position"])))
        elif m := _TIME_INDEX_ENTRY.match(line):
            segments[-1].time_index_entries.append((int(m["timestamp"]), int(m["offset"])))
        elif line.startswith("| offset: "):
            m = _RECORD.match(line)
            if m is None or not segments or not segments[-1].batches:
                raise DumpLogParseError(f"unparsable record line: {line!r}")
            if sized:
                key, value = _split_key_value(m["rest"], int(m["key_size"]), int(m["value_size"]))
            else:
                km = re.match(r"^(?: key: (.*?))?(?: payload: (.*))?$", m["rest"])
                key, value = (km.group(1), km.group(2)) if km else (None, None)
            segments[-1].batches[-1].records.append(
                DumpedRecord(
                    offset=int(m["offset"]),
                    timestamp=int(m["ts"]),
                    timestamp_type=m["ts_type"],
                    key=key,
                    value=value,
                    header_keys=tuple(h for h in m["headers"].split(",") if h),
                    sequence=int(m["seq"]),
                )
            )
    return segments


def dump_log(files: Iterable[Path]) -> list[DumpedSegment]:
    """Deep-iterate `files` (one JVM for all of them) and return every batch and record they hold."""
    paths = [str(p) for p in files]
    if not paths:
        raise ValueError("dump_log needs at least one segment file")
    out = kafka_tool("kafka-dump-log", "--deep-iteration", "--print-data-log", "--files", ",".join(paths))
    return parse_dump(out.stdout)


@dataclass(frozen=True)
class OffsetCommit:
    """A committed offset as stored in __consumer_offsets (OffsetCommitKey type 1 + OffsetCommitValue)."""

    group: str
    topic: str
    partition: int
    offset: int
    commit_timestamp: int


def dump_consumer_offsets(files: Iterable[Path]) -> tuple[list[OffsetCommit], list[dict[str, Any]]]:
    """Decode __consumer_offsets segments with --offsets-decoder: (offset commits, group metadata values)."""
    paths = [str(p) for p in files]
    if not paths:
        raise ValueError("dump_consumer_offsets needs at least one segment file")
    out = kafka_tool("kafka-dump-log", "--offsets-decoder", "--files", ",".join(paths))
    commits: list[OffsetCommit] = []
    groups: list[dict[str, Any]] = []
    for segment in parse_dump(out.stdout, sized=False):
        for record in segment.records:
            if record.key is None:
                raise DumpLogParseError(f"__consumer_offsets record without key at {record.offset}")
            key = json.loads(record.key)
            value = json.loads(record.value) if record.value not in (None, "<DELETE>") else None
            if key["type"] in ("0", "1") and value is not None:
                data = value["data"]
                commits.append(
                    OffsetCommit(
                        group=key["data"]["group"],
                        topic=key["data"]["topic"],
                        partition=int(key["data"]["partition"]),
                        offset=int(data["offset"]),
                        commit_timestamp=int(data["commitTimestamp"]),
                    )
                )
            elif key["type"] == "2" and value is not None:
                groups.append({"group": key["data"]["group"], **value["data"]})
    return commits, groups
