"""`ebb-broker` / `python -m ebb_broker`: the command line (README, ebb-broker configs)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from ebb_broker.log.errors import InvalidConfigError


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def parser() -> argparse.ArgumentParser:
    # `@FILE` reads more arguments from FILE, one per line: a Kubernetes Secret mounted as a file passes
    # `--add-scram=...` without putting the password on the command line.
    p = argparse.ArgumentParser(
        prog="ebb-broker",
        description="A Kafka-protocol broker with Ebb's log engine.",
        fromfile_prefix_chars="@",
    )
    p.add_argument("--data-dir", required=True, type=Path, help="log directory (Kafka's log.dirs)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address of the PLAINTEXT listener (unless `listeners` is set)"
    )
    p.add_argument("--port", type=int, default=9092, help="its port (0 = any free port)")
    p.add_argument("--advertised-host", default=None, help="its host name given to clients (default: --host)")
    p.add_argument("--broker-id", type=int, default=0, help="node id (Kafka's node.id)")
    p.add_argument("--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port")
    p.add_argument(
        "--config",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="a broker config with Kafka's name, e.g. log.retention.ms=60000 (repeatable)",
    )
    p.add_argument(
        "--add-scram",
        action="append",
        default=[],
        metavar="'SCRAM-SHA-256=[name=USER,password=PASSWORD]'",
        help="set a SCRAM credential at start, as kafka-storage format --add-scram (repeatable)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    from ebb_broker.app import BrokerOptions, run

    options = BrokerOptions(
        data_dir=args.data_dir,
        host=args.host,
        port=args.port,
        advertised_host=args.advertised_host,
        broker_id=args.broker_id,
        metrics_port=args.metrics_port,
        configs=dict(args.config),
        add_scram=tuple(args.add_scram),
    )
    try:
        asyncio.run(run(options))
    except InvalidConfigError as exc:
        print(f"ebb-broker: invalid configuration: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
