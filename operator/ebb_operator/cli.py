"""`ebb`: tools for users without Kubernetes.

`ebb delete-records` is KIP-107's kafka-delete-records.sh: same JSON offsets file, same per-partition
output (`low_watermark: N` or `error: ...`). `ebb crds` prints the CRDs; `ebb rbac` the ClusterRole.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from ebb_operator import crdgen, rbac
from ebb_operator.kafka import EARLIEST, LATEST, ClusterAdmin, ClusterConnection, TopicPartition
from ebb_operator.models.common import Model
from ebb_operator.models.delete_records import HIGH_WATERMARK, PartitionOffset
from ebb_operator.models.validation import explain


class OffsetJsonFile(Model):
    """KIP-107's file: {"partitions": [{"topic", "partition", "offset"}], "version": 1}."""

    partitions: list[PartitionOffset] = Field(min_length=1)
    version: int = Field(default=1, ge=1, le=1)


class UsageError(ValueError):
    pass


def load_offsets(path: Path) -> dict[TopicPartition, int]:
    """Parse and check the offsets file; a duplicate partition aborts the run, as Kafka's tool does."""
    try:
        parsed = OffsetJsonFile.model_validate_json(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except ValidationError as exc:
        raise UsageError(f"{path} is not a valid offsets file: {explain(exc, '')}") from exc
    offsets: dict[TopicPartition, int] = {}
    for p in parsed.partitions:
        tp = TopicPartition(p.topic, p.partition)
        if tp in offsets:
            raise UsageError(f"offset json file contains duplicate topic partitions: {tp}")
        offsets[tp] = p.offset
    return offsets


def _client_properties(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    props = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    return props


def delete_records(args: argparse.Namespace) -> int:
    offsets = load_offsets(args.offset_json_file)
    connection = ClusterConnection.of(args.bootstrap_server, _client_properties(args.command_config))
    with ClusterAdmin(connection) as admin:
        if args.dry_run:
            starts = admin.offsets(offsets, EARLIEST)
            ends = admin.offsets(offsets, LATEST)
            print("Dry run: nothing is deleted")
            failed = False
            for tp, offset in offsets.items():
                start, end = starts[tp], ends[tp]
                if start.error or end.error or start.offset is None or end.offset is None:
                    print(f"partition: {tp}\terror: {start.error or end.error}")
                    failed = True
                    continue
                target = end.offset if offset == HIGH_WATERMARK else offset
                if target > end.offset:
                    print(f"partition: {tp}\terror: OFFSET_OUT_OF_RANGE (high watermark {end.offset})")
                    failed = True
                    continue
                after = max(start.offset, target)
                print(f"partition: {tp}\tlow_watermark: {start.offset}\twould_become: {after}")
            return 1 if failed else 0
        print("Executing records delete operation")
        results = admin.delete_records(offsets)
        print("Records delete operation completed:")
        for tp in offsets:
            result = results[tp]
            if result.error is None:
                print(f"partition: {tp}\tlow_watermark: {result.low_watermark}")
            else:
                print(f"partition: {tp}\terror: {result.error}")
        return 1 if any(r.error for r in results.values()) else 0


def crds(args: argparse.Namespace) -> int:
    if args.out:
        for path in crdgen.write(args.out):
            print(f"wrote {path}")
    else:
        sys.stdout.write("---\n".join(crdgen.rendered().values()))
    return 0


def rbac_cmd(_: argparse.Namespace) -> int:
    sys.stdout.write(yaml.safe_dump(rbac.cluster_role(), sort_keys=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ebb", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dr = sub.add_parser("delete-records", help="delete records below the given offsets (KIP-107)")
    dr.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    dr.add_argument("--offset-json-file", required=True, type=Path, help="KIP-107 JSON offsets file")
    dr.add_argument("--command-config", type=Path, help="client properties file (security.protocol, sasl.*)")
    dr.add_argument("--dry-run", action="store_true", help="print current and resulting low watermarks only")
    dr.set_defaults(func=delete_records)
    cr = sub.add_parser("crds", help="print (or write with --out) the CRD manifests")
    cr.add_argument("--out", type=Path)
    cr.set_defaults(func=crds)
    rb = sub.add_parser("rbac", help="print the operator's ClusterRole")
    rb.set_defaults(func=rbac_cmd)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
