"""`python -m ebb_operator.analysis --policy NAMESPACE/NAME`: one run of a RetentionPolicy's analysis.

Also the main file of a SparkApplication (same arguments; spark-submit's master is kept). Writes the plan
(summary, per-topic held partitions, per-partition cuts) as JSON to stdout or --output and, when reading
the policy from the API server and there is something to delete, creates one DeleteRecords owned by the
policy with the plan's partitions and guard Consumed (dryRun true when the policy is a dry run).
Exit status: 0 planned, 2 unusable policy or arguments, 1 the cluster could not be read (nothing created).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ebb_operator.analysis.policy import AnalysisPolicy, PolicyError
from ebb_operator.kafka import ClusterConfigError, ClusterConnection

log = logging.getLogger("ebb_operator.analysis")

RUN_ID_ENV = "EBB_RUN_ID"
MAX_PARTITIONS = 10000  # DeleteRecords.spec.partitions maxItems (models/delete_records.py)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m ebb_operator.analysis", description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--policy", metavar="NAMESPACE/NAME", help="read the RetentionPolicy from the API server"
    )
    src.add_argument(
        "--policy-file", type=Path, help="read the RetentionPolicy from a YAML/JSON file (local run)"
    )
    ap.add_argument("--output", type=Path, help="write the plan JSON here instead of stdout")
    ap.add_argument(
        "--master",
        help="Spark master (default local[*]; under spark-submit, as in a SparkApplication, its own)",
    )
    ap.add_argument("--bootstrap-servers", help="override spec.cluster / the default cluster")
    ap.add_argument(
        "--run-id", default=os.environ.get(RUN_ID_ENV), help=f"names the DeleteRecords (env {RUN_ID_ENV})"
    )
    ap.add_argument("--now-ms", type=int, help="plan as of this time (ms since epoch); default: now")
    ap.add_argument(
        "--max-records-per-split", default="1000000", help="__consumer_offsets records per Spark task"
    )
    return ap.parse_args(argv)


def _kube() -> Any:
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client


def _read_policy(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    if args.policy_file is not None:
        return yaml.safe_load(args.policy_file.read_text()), None
    ns, sep, name = args.policy.partition("/")
    if not sep or not ns or not name:
        raise PolicyError(f"--policy {args.policy!r}: expected NAMESPACE/NAME")
    k = _kube()
    obj = k.CustomObjectsApi().get_namespaced_custom_object(
        "ebb.dev", "v1alpha1", ns, "retentionpolicies", name
    )
    return obj, k


def _connection(policy: AnalysisPolicy, args: argparse.Namespace, kube: Any) -> ClusterConnection:
    props: dict[str, str] = {}
    if policy.secret_name:
        if kube is None:
            raise PolicyError("spec.cluster.secretRef needs the API server: run with --policy NAMESPACE/NAME")
        secret = kube.CoreV1Api().read_namespaced_secret(policy.secret_name, policy.namespace)
        props = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    return ClusterConnection.resolve(args.bootstrap_servers or policy.bootstrap_servers, props)


def delete_records_object(
    policy: AnalysisPolicy, run_id: str, deletes: list[Any], spec_cluster: Any
) -> dict[str, Any]:
    """The DeleteRecords for this run, owned by the policy so it is listed (and pruned) with it."""
    from ebb_operator.models.delete_records import DeleteRecordsSpec, Guard

    spec = DeleteRecordsSpec(
        cluster=spec_cluster, partitions=deletes, guard=Guard.CONSUMED, dry_run=policy.dry_run
    )
    return {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "DeleteRecords",
        "metadata": {
            "name": f"{policy.name}-{run_id}"[:253],
            "namespace": policy.namespace,
            "labels": {"ebb.dev/retention-policy": policy.name[:63], "ebb.dev/run-id": run_id[:63]},
            "ownerReferences": [
                {
                    "apiVersion": "ebb.dev/v1alpha1",
                    "kind": "RetentionPolicy",
                    "name": policy.name,
                    "uid": policy.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec.to_k8s(),
    }


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        obj, kube = _read_policy(args)
        policy = AnalysisPolicy.from_resource(obj)
        connection = _connection(policy, args, kube)
    except (PolicyError, ClusterConfigError, OSError, yaml.YAMLError) as e:
        log.error("cannot analyse: %s", e)
        return 2

    from ebb_operator.analysis.job import run_analysis
    from ebb_operator.analysis.offsets_reader import OffsetsReadError
    from ebb_operator.analysis.offsets_records import OffsetsRecordError
    from ebb_operator.analysis.session import spark_session
    from ebb_operator.analysis.snapshot import SnapshotError

    # Under spark-submit (a SparkApplication) PythonRunner sets the gateway variables: keep its master.
    master = args.master or (None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]")
    run_id = args.run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    now_ms = args.now_ms if args.now_ms is not None else int(time.time() * 1000)
    spark = spark_session(master)
    try:
        result = run_analysis(
            spark, policy, connection, now_ms, maxRecordsPerSplit=args.max_records_per_split
        )
    except (SnapshotError, OffsetsReadError, OffsetsRecordError) as e:
        log.error("cannot plan: %s (nothing was deleted)", e)
        return 1
    finally:
        spark.stop()

    # One DeleteRecords holds at most its CRD's limit of partitions: the biggest cuts go first, the
    # rest wait for the next run (they are reported as deferred, never silently dropped).
    records = {(p.topic, p.partition): p.records for p in result.partitions}
    by_size = sorted(result.deletes, key=lambda d: -records[d.topic, d.partition])
    chosen, deferred = by_size[:MAX_PARTITIONS], by_size[MAX_PARTITIONS:]
    out: dict[str, Any] = {
        "policy": f"{policy.namespace}/{policy.name}",
        "runId": run_id,
        "dryRun": policy.dry_run,
        "nowMs": now_ms,
        **result.to_json(),
        "deleteRecords": None,
        "deferredPartitions": len(deferred),
    }
    if chosen and kube is not None:
        body = delete_records_object(policy, run_id, chosen, obj["spec"].get("cluster"))
        kube.CustomObjectsApi().create_namespaced_custom_object(
            "ebb.dev", "v1alpha1", policy.namespace, "deleterecords", body
        )
        out["deleteRecords"] = body["metadata"]["name"]
        log.info("created DeleteRecords %s with %d partitions", out["deleteRecords"], len(chosen))
    text = json.dumps(out, indent=2)
    if args.output is not None:
        args.output.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
