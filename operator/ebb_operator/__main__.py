"""`python -m ebb_operator`: run the kopf operator with Prometheus metrics and a liveness endpoint."""

from __future__ import annotations

import argparse
import logging
import os

import kopf
from prometheus_client import start_http_server

from ebb_operator.kafka.connection import DEFAULT_BOOTSTRAP_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ebb_operator", description=__doc__)
    parser.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        help="watch this namespace (repeatable; glob patterns allowed); default: all",
    )
    parser.add_argument(
        "--default-bootstrap-servers",
        default=os.environ.get(DEFAULT_BOOTSTRAP_ENV),
        help=f"cluster for objects without spec.cluster (env {DEFAULT_BOOTSTRAP_ENV})",
    )
    parser.add_argument("--metrics-port", type=int, default=9090, help="Prometheus port (0 disables)")
    parser.add_argument("--liveness-port", type=int, default=8080, help="serves /healthz (0 disables)")
    parser.add_argument("--host", default="0.0.0.0", help="address for metrics and liveness")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    if args.default_bootstrap_servers:
        os.environ[DEFAULT_BOOTSTRAP_ENV] = args.default_bootstrap_servers
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat.PLAIN)
    logging.getLogger("kafka").setLevel(logging.WARNING)
    if args.metrics_port:
        start_http_server(args.metrics_port, addr=args.host)
    import ebb_operator.handlers  # noqa: F401  (registers the handlers with kopf)

    kopf.run(
        standalone=True,
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        liveness_endpoint=f"http://{args.host}:{args.liveness_port}/healthz" if args.liveness_port else None,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
