"""`python -m ebb_operator.install {prepare,finish,release-finalizers}`: the chart's hook Jobs
(charts/ebb/templates/install-hooks.yaml, uninstall-hook.yaml) pass what the values decided as flags."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from pydantic import ValidationError

from ebb_operator import kube
from ebb_operator.install import default_cluster, finalizers, secrets


def _labels(text: str) -> dict[str, str]:
    labels = json.loads(text)
    if not isinstance(labels, dict):
        raise argparse.ArgumentTypeError("--labels: a JSON object")
    return {str(k): str(v) for k, v in labels.items()}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ebb_operator.install", description=__doc__.splitlines()[0]
    )
    steps = parser.add_subparsers(dest="step", required=True)

    prepare = steps.add_parser("prepare", help="pre-install/pre-upgrade: the broker's credentials, made once")
    prepare.add_argument("--namespace", required=True)
    prepare.add_argument("--labels", type=_labels, default={}, help="labels of the Secrets made (JSON)")
    prepare.add_argument("--keep", action="append", default=[], help="Secret to mark keep if it exists")
    prepare.add_argument("--admin-secret", help="make this admin Secret (a random password) if missing")
    prepare.add_argument("--admin-user", default="admin")
    prepare.add_argument("--tls-secret", help="make this TLS Secret (a CA and the broker's certificate)")
    prepare.add_argument("--issuer-ca-secret", help="make this CA Secret (a cert-manager CA Issuer's)")
    prepare.add_argument("--ca-name", default="ebb-broker-ca", help="the generated CA's common name")
    prepare.add_argument("--common-name", default="ebb-broker")
    prepare.add_argument("--dns-name", action="append", default=[])
    prepare.add_argument("--ip", action="append", default=[])
    prepare.add_argument("--days", type=int, default=3650)

    finish = steps.add_parser("finish", help="post-install/post-upgrade: client Secret, default KafkaCluster")
    finish.add_argument("--namespace", required=True)
    finish.add_argument("--labels", type=_labels, default={})
    finish.add_argument("--client-secret", help="write the chart broker's client properties to this Secret")
    finish.add_argument("--admin-secret")
    finish.add_argument("--admin-user", default="admin")
    finish.add_argument("--tls-secret")
    finish.add_argument("--wait-seconds", type=float, default=300.0, help="for the broker's TLS Secret")
    finish.add_argument("--kafka-cluster", help="apply the KafkaCluster of this name")
    finish.add_argument("--kafka-cluster-spec", type=json.loads, help="its spec (JSON)")

    steps.add_parser("release-finalizers", help="pre-delete: Ebb's finalizer off every Ebb object")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        if args.step == "prepare":
            secrets.keep(args.namespace, args.keep)
            if args.admin_secret:
                secrets.admin_password(args.namespace, args.admin_secret, args.admin_user, args.labels)
            cert = secrets.Certificate(args.common_name, args.dns_name, args.ip, args.days)
            if args.tls_secret:
                secrets.broker_tls(args.namespace, args.tls_secret, args.ca_name, cert, args.labels)
            if args.issuer_ca_secret:
                secrets.issuer_ca(args.namespace, args.issuer_ca_secret, args.ca_name, args.days, args.labels)
        elif args.step == "finish":
            if args.client_secret:
                secrets.client_secret(
                    args.namespace,
                    args.client_secret,
                    user=args.admin_user,
                    admin_secret=args.admin_secret,
                    tls_secret=args.tls_secret,
                    labels=args.labels,
                    wait_seconds=args.wait_seconds,
                )
            if args.kafka_cluster:
                default_cluster.apply(args.kafka_cluster, args.kafka_cluster_spec or {}, args.labels)
        else:
            print(f"released {finalizers.release()} objects")
    except (secrets.MaterialError, kube.KubeApiError, ValidationError) as exc:
        print(f"ebb install {args.step}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
