"""`python -m ebb_operator.analysis --request FILE`: one run of a RetentionPolicy's analysis.

The operator writes the request (the policy, the cluster connection, the groups the namespace may leave
out) and reads the plan back; the job reads nothing from the Kubernetes API and creates nothing there:
it writes the plan to `--output` (engine Local) or, as the main file of a SparkApplication, to the
ConfigMap `--report-configmap` in `--report-namespace`, where it also keeps its progress while it runs
(its only API right). `--policy-file` plans a RetentionPolicy written to a
YAML/JSON file against `--bootstrap-servers`, for trying a policy by hand. Exit status: 0 planned, 2
unusable request or arguments, 1 the cluster could not be read (nothing planned: fail closed).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from pathlib import Path

import yaml
from pydantic import ValidationError

from ebb_operator.analysis.policy import AnalysisPolicy, PolicyError
from ebb_operator.kafka import ClusterConfigError, ClusterConnection
from ebb_operator.models.delete_records import MAX_PARTITIONS
from ebb_operator.models.retention_policy import RunProgress
from ebb_operator.models.run import PLAN_KEY, PROGRESS_KEY, RunPlan, RunRequest, pack_plan

log = logging.getLogger("ebb_operator.analysis")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m ebb_operator.analysis", description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--request", type=Path, help="the run's request, as the operator writes it (JSON)")
    src.add_argument("--policy-file", type=Path, help="a RetentionPolicy in a YAML/JSON file (manual run)")
    ap.add_argument(
        "--bootstrap-servers", help="with --policy-file: the cluster (PLAINTEXT; default spec.cluster's)"
    )
    ap.add_argument("--output", type=Path, help="write the plan JSON here instead of stdout")
    ap.add_argument(
        "--report-configmap", metavar="NAME", help="also store the plan, and the progress meanwhile, here"
    )
    ap.add_argument(
        "--report-namespace", metavar="NS", help="the namespace of --report-configmap (default: the policy's)"
    )
    ap.add_argument(
        "--master",
        help="Spark master (default local[*]; under spark-submit, as in a SparkApplication, its own)",
    )
    ap.add_argument(
        "--driver-java-options",
        help="options of the Spark driver's JVM in local mode (spark.driver.extraJavaOptions; the "
        "operator's Local engine passes EBB_LOCAL_ANALYSIS_JAVA_OPTIONS)",
    )
    ap.add_argument("--now-ms", type=int, help="plan as of this time (ms since epoch); default: now")
    ap.add_argument(
        "--max-records-per-split", default="1000000", help="__consumer_offsets records per Spark task"
    )
    return ap.parse_args(argv)


def read_request(args: argparse.Namespace) -> RunRequest:
    if args.request is not None:
        return RunRequest.model_validate_json(args.request.read_bytes())
    obj = yaml.safe_load(args.policy_file.read_text())
    policy = AnalysisPolicy.from_resource(obj)  # validates, with errors naming the field
    servers = args.bootstrap_servers or ((obj["spec"].get("cluster") or {}).get("bootstrapServers"))
    if not servers:
        raise PolicyError("--policy-file needs --bootstrap-servers (or spec.cluster.bootstrapServers)")
    return RunRequest.model_validate(
        {
            "policy": {"namespace": policy.namespace, "name": policy.name},
            "spec": obj["spec"],
            "runId": time.strftime("%Y%m%d-%H%M%S", time.gmtime()),
            "bootstrapServers": servers,
        }
    )


class Report:
    """The run's ConfigMap (created by the operator with the run's labels): keys merged in, the rest kept."""

    def __init__(self, namespace: str, name: str, request: RunRequest) -> None:
        self.namespace, self.name, self.request = namespace, name, request

    def write(self, data: dict[str, str]) -> None:
        from ebb_operator import kube  # only a SparkApplication's driver talks to the API server

        try:
            kube.patch_config_map_data(self.namespace, self.name, data)
        except kube.NotFoundError:  # run by hand: no operator made it
            policy, run = self.request.policy, self.request.run_id
            labels = {kube.POLICY_LABEL: policy.name[:63].rstrip("-_."), kube.RUN_LABEL: run[:63]}
            kube.upsert_config_map(self.namespace, self.name, data, labels, None)

    def progress(self, progress: RunProgress) -> None:
        self.write({PROGRESS_KEY: progress.model_dump_json(by_alias=True, exclude_none=True)})


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        request = read_request(args)
        policy = AnalysisPolicy.from_request(request)
        connection = ClusterConnection.of(request.bootstrap_servers, request.client_properties)
    except (PolicyError, ClusterConfigError, ValidationError, OSError, yaml.YAMLError, KeyError) as e:
        log.error("cannot analyse: %s", e)
        return 2

    from ebb_operator.analysis.commits_admin import CommitsReadError
    from ebb_operator.analysis.job import phase, run_analysis
    from ebb_operator.analysis.offsets_reader import OffsetsReadError
    from ebb_operator.analysis.offsets_records import OffsetsRecordError
    from ebb_operator.analysis.progress import ProgressReporter
    from ebb_operator.analysis.session import spark_session
    from ebb_operator.analysis.snapshot import SnapshotError
    from ebb_operator.analysis.unread import by_topic

    # Under spark-submit (a SparkApplication) PythonRunner sets the gateway variables: keep its master.
    master = args.master or (None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]")
    now_ms = args.now_ms or request.now_ms or int(time.time() * 1000)
    report = None
    if args.report_configmap:
        report = Report(args.report_namespace or request.policy.namespace, args.report_configmap, request)
    with phase("starting Spark"):
        java = args.driver_java_options
        spark = spark_session(master, conf={"spark.driver.extraJavaOptions": java} if java else None)
    try:
        with ProgressReporter(spark.sparkContext, report.progress) if report else contextlib.nullcontext():
            result = run_analysis(
                spark,
                policy,
                connection,
                now_ms,
                empty_since=request.empty_since,
                unread_ledger=request.unread_ledger,
                maxRecordsPerSplit=args.max_records_per_split,
            )
    except (SnapshotError, OffsetsReadError, OffsetsRecordError, CommitsReadError) as e:
        log.error("cannot plan: %s (nothing was deleted)", e)
        return 1
    finally:
        spark.stop()

    plan = result.plan
    unread = by_topic(result.unread.ledger)
    for t in plan.topics:
        t.unread, t.unread_count = unread.get(t.topic, ([], 0))
    # One DeleteRecords holds at most its CRD's limit of partitions: the biggest cuts go first, the
    # rest wait for the next run (they are reported as deferred, never silently dropped).
    records = {(p.topic, p.partition): p.records for p in plan.partitions}
    by_size = sorted(plan.deletes, key=lambda d: -records[d.topic, d.partition])
    chosen, deferred = by_size[:MAX_PARTITIONS], by_size[MAX_PARTITIONS:]
    cut = {(d.topic, d.partition) for d in chosen}
    out = RunPlan(
        policy=f"{policy.namespace}/{policy.name}",
        run_id=request.run_id,
        dry_run=policy.dry_run,
        now_ms=now_ms,
        summary=plan.summary,
        topics=plan.topics,
        partitions=plan.partitions,
        deletes=chosen,
        counted_groups=plan.counted_groups,
        evictions=[e for e in plan.evictions if (e.topic, e.partition) in cut],
        deferred_partitions=len(deferred),
        empty_since=result.empty_since,
        unread_ledger=result.unread.ledger,
        unread_counted=result.unread.counted,
        unread_deferred=result.unread.deferred,
    )
    if report is not None:
        report.write({PLAN_KEY: pack_plan(out)})
    with phase("handing the plan back"):
        text = out.model_dump_json(by_alias=True, indent=2)
        if args.output is not None:
            args.output.write_text(text + "\n")
        elif not args.report_configmap:
            print(text)
    log.info(
        "planned: %d cuts, %d records, %d bytes; %d partitions held; %d unread records newly lost",
        len(chosen),
        plan.summary.deletable_records,
        plan.summary.reclaimable_bytes,
        plan.summary.held_partitions,
        sum(c.records for c in result.unread.counted),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
