"""`python -m ebb_operator`: run the kopf operator with Prometheus metrics and a liveness endpoint.

Settings are read once here (environment, then command-line flags) and handed to every handler as
kopf's memo (docs/operator.md lists them). With leader election on (the default), kopf processes
resources only while this replica holds the Lease (ebb_operator/leader.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys

import kopf
from prometheus_client import start_http_server

from ebb_operator import metrics
from ebb_operator.leader import Leadership
from ebb_operator.settings import OperatorSettings, SettingsError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ebb_operator", description=__doc__.splitlines()[0])
    parser.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        help="watch this namespace (repeatable; glob patterns allowed); default: all",
    )
    parser.add_argument(
        "--default-cluster", help="KafkaCluster of objects naming none (env EBB_DEFAULT_CLUSTER)"
    )
    parser.add_argument(
        "--default-bootstrap-servers",
        help="with inline clusters allowed: bootstrap servers of objects naming none "
        "(env EBB_DEFAULT_BOOTSTRAP_SERVERS)",
    )
    parser.add_argument("--metrics-port", type=int, default=9090, help="Prometheus port (0 disables)")
    parser.add_argument("--liveness-port", type=int, default=8080, help="serves /healthz (0 disables)")
    parser.add_argument("--host", default="0.0.0.0", help="address for metrics, liveness and the webhook")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    try:
        settings = OperatorSettings.from_env()
    except SettingsError as exc:
        print(f"ebb-operator: {exc}", file=sys.stderr)
        return 2
    overrides = {
        "default_cluster": args.default_cluster,
        "default_bootstrap_servers": args.default_bootstrap_servers,
        "listen_host": args.host,
        "namespaces": tuple(args.namespace),
    }
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v})

    log_format = kopf.LogFormat.JSON if settings.log_format == "json" else kopf.LogFormat.PLAIN
    kopf.configure(verbose=args.verbose, log_format=log_format)
    logging.getLogger("kafka").setLevel(logging.WARNING)
    metrics.record_build()
    if args.metrics_port:
        start_http_server(args.metrics_port, addr=args.host)
    from ebb_operator import handlers  # registers the handlers with kopf
    from ebb_operator.handlers.runtime import Runtime

    handlers.register(settings)
    liveness = f"http://{args.host}:{args.liveness_port}/healthz" if args.liveness_port else None
    leadership = Leadership(settings) if settings.leader_election else None
    if leadership is not None:
        leadership.start()
    try:
        kopf.run(
            standalone=True,
            clusterwide=not args.namespace,
            namespaces=args.namespace,
            memo=kopf.Memo(runtime=Runtime.create(settings)),
            liveness_endpoint=liveness,
        )
    finally:
        if leadership is not None:
            leadership.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
