"""The SparkApplication a run creates: in the operator's jobs namespace, never the policy's; labelled with
its policy (owner references cannot cross namespaces); the operator's image always; pods that Pod
Security `restricted` admits; and the progress the tenant reads in its policy's status."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from ebb_operator.handlers.errors import InvalidSpec
from ebb_operator.handlers.retention.engines import (
    REQUEST_DIR,
    LocalEngine,
    local_job_argv,
    progress_of,
    run_labels,
    run_name,
    run_selector,
    spark_application,
)
from ebb_operator.handlers.retention.runner import describe
from ebb_operator.handlers.runtime import Runtime
from ebb_operator.models.plan import PlanSummary
from ebb_operator.models.retention_policy import RetentionPolicySpec, RunProgress
from ebb_operator.models.run import PROGRESS_KEY, PolicyRef, RunPlan, RunRequest
from ebb_operator.settings import OperatorSettings, SettingsError

SETTINGS = OperatorSettings(image="ebb-operator:2", spark_service_account="ebb-spark-driver")
POLICY = PolicyRef(namespace="team-a", name="orders", uid="0b9c-uid")


def _spec(**app: Any) -> RetentionPolicySpec:
    return RetentionPolicySpec.model_validate(
        {
            "topics": {"include": ["t"]},
            "consumedRetention": "1h",
            "analysis": {"engine": "SparkApplication", "sparkApplication": app},
        }
    )


def _app(spec: RetentionPolicySpec, settings: OperatorSettings = SETTINGS) -> dict[str, Any]:
    name = run_name(POLICY, "r1")
    return spark_application(name, "ebb-jobs", run_labels(POLICY, "r1"), spec, settings)


def test_a_run_lives_in_the_jobs_namespace_labelled_with_its_policy() -> None:
    app = _app(_spec())
    name = run_name(POLICY, "r1")
    meta = app["metadata"]
    assert (meta["name"], meta["namespace"]) == (name, "ebb-jobs")
    assert "ownerReferences" not in meta, "an owner in another namespace would be garbage-collected at once"
    assert meta["labels"] == {
        "ebb.dev/policy-namespace": "team-a",
        "ebb.dev/retention-policy": "orders",
        "ebb.dev/policy-uid": "0b9c-uid",
        "ebb.dev/run-id": "r1",
    }
    assert run_selector("0b9c-uid", "r1") == "ebb.dev/policy-uid=0b9c-uid,ebb.dev/run-id=r1"
    s = app["spec"]
    assert (s["type"], s["image"], s["restartPolicy"]) == ("Python", "ebb-operator:2", {"type": "Never"})
    assert s["mainApplicationFile"].startswith("local:///")
    assert s["mainApplicationFile"].endswith("ebb_operator/analysis/__main__.py")
    # The driver writes progress and plan into the run's ConfigMap, in the run's namespace.
    assert s["arguments"] == [
        "--request", f"{REQUEST_DIR}/request.json",
        "--report-configmap", name, "--report-namespace", "ebb-jobs",
    ]  # fmt: skip
    for pod in (s["driver"], s["executor"]):
        assert pod["secrets"] == [{"name": name, "path": REQUEST_DIR, "secretType": "Generic"}]
        assert pod["serviceAccount"] == "ebb-spark-driver"
    assert "imagePullSecrets" not in s


def test_run_names_are_unique_per_policy_and_valid_service_names() -> None:
    """The jobs namespace is shared: two tenants' policies of one name never collide, and every name is a
    DNS-1035 label (Spark names the driver's Service after it)."""
    names = {
        run_name(PolicyRef(namespace=ns, name=n, uid=uid), "20260101-120000")
        for ns, n, uid in [("team-a", "orders", "u1"), ("team-b", "orders", "u2"), ("team-a", "orders", "u3")]
    }
    assert len(names) == 3
    long = PolicyRef(namespace="t", name="9." + "x" * 250, uid="u")
    for name in [
        *names,
        run_name(long, "20260101-120000"),
        run_name(PolicyRef(namespace="t", name="9"), "r"),
    ]:
        assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63, name
    assert run_name(POLICY, "r1") == run_name(POLICY, "r1"), "a resumed run finds its objects again"


def test_driver_and_executor_pods_fit_pod_security_restricted() -> None:
    s = _app(_spec())["spec"]
    for role, container in (("driver", "spark-kubernetes-driver"), ("executor", "spark-kubernetes-executor")):
        pod = s[role]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (c,) = pod["containers"]
        assert c["name"] == container, "Spark takes its container from the template by this name"
        assert c["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        # The root filesystem is read-only: Python, the JVM and Spark write under /tmp.
        assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
        assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]


def test_pull_secrets_come_from_the_operators_settings() -> None:
    settings = OperatorSettings.from_env(
        {"EBB_OPERATOR_IMAGE": "registry.example/ebb:2", "EBB_SPARK_IMAGE_PULL_SECRETS": "regcred, other"}
    )
    assert _app(_spec(), settings)["spec"]["imagePullSecrets"] == ["regcred", "other"]


def test_a_tenant_sizes_its_pods_and_may_name_a_service_account_but_never_the_image() -> None:
    """Resources stay the tenant's; a service account of its own was admitted before (access.py: grant and
    analysis credential); an image of its own never reaches the SparkApplication."""
    spec = _spec(
        image="registry/evil:1",
        serviceAccount="team-a-spark",
        driver={"cores": 2, "memory": "2g"},
        executor={"cores": 3, "memory": "4g", "instances": 5},
    )
    s = _app(spec)["spec"]
    assert s["image"] == "ebb-operator:2"
    assert {k: s["driver"][k] for k in ("cores", "memory", "serviceAccount")} == {
        "cores": 2, "memory": "2g", "serviceAccount": "team-a-spark"
    }  # fmt: skip
    assert {k: s["executor"][k] for k in ("cores", "memory", "instances", "serviceAccount")} == {
        "cores": 3, "memory": "4g", "instances": 5, "serviceAccount": "team-a-spark"
    }  # fmt: skip


def test_without_an_image_the_run_is_an_invalid_spec() -> None:
    with pytest.raises(InvalidSpec, match="EBB_OPERATOR_IMAGE"):
        _app(_spec(), OperatorSettings())


def test_the_jobs_namespace_defaults_to_the_operators() -> None:
    assert OperatorSettings(namespace="ebb").job_namespace == "ebb"
    env = {"EBB_OPERATOR_NAMESPACE": "ebb", "EBB_SPARK_JOB_NAMESPACE": "ebb-jobs"}
    assert OperatorSettings.from_env(env).job_namespace == "ebb-jobs"


def test_progress_joins_the_spark_operators_state_and_the_drivers_report() -> None:
    app = {
        "status": {
            "applicationState": {"state": "RUNNING"},
            "executorState": {"x-exec-1": "RUNNING", "x-exec-2": "RUNNING", "x-exec-3": "FAILED"},
        }
    }
    report = {PROGRESS_KEY: '{"stage": "the plan", "tasksDone": 37, "tasksTotal": 40}'}
    progress = progress_of(app, report)
    assert progress == RunProgress(
        state="RUNNING", executors=2, stage="the plan", tasks_done=37, tasks_total=40
    )
    assert describe(progress) == "RUNNING, 2 executors, the plan: 37/40 tasks"
    # Before the driver reports (or if what it wrote is unreadable): the Spark operator's view alone.
    assert progress_of({}, {}) == RunProgress(state="NEW", executors=0)
    assert progress_of(app, {PROGRESS_KEY: "{not json"}).stage is None
    assert describe(progress_of({}, {})) == "NEW"


class _HeldJobs(LocalEngine):
    """Engine Local with its job (the Spark subprocess) replaced by one the test ends: what is under test is
    which runs may start, not the job."""

    started: list[str]
    release: asyncio.Event

    async def _run(self, request: RunRequest) -> RunPlan:
        self.started.append(request.run_id)
        await self.release.wait()
        return RunPlan(policy=self.label, run_id=request.run_id, now_ms=0, summary=PlanSummary())


def test_local_runs_beyond_the_operators_slots_wait_and_say_so() -> None:
    settings = OperatorSettings.from_env({"EBB_LOCAL_ANALYSIS_RUNS": "2"})

    async def scenario() -> None:
        slots = Runtime.create(settings).local_analysis_slots
        started: list[str] = []
        said: list[tuple[str, str]] = []
        release = asyncio.Event()

        def engine(name: str) -> _HeldJobs:
            async def waiting(message: str) -> None:
                said.append((name, message))

            job = _HeldJobs(f"team-a/{name}", settings, slots, waiting)
            job.started, job.release = started, release
            return job

        requests = [RunRequest.model_validate({"policy": {"namespace": "team-a", "name": f"p{i}"},
                     "spec": {"topics": {"include": ["t"]}, "consumedRetention": "1h"}, "runId": f"r{i}",
                     "bootstrapServers": "kafka:9092"}) for i in range(3)]  # fmt: skip
        runs = [asyncio.create_task(engine(f"p{i}").run(r)) for i, r in enumerate(requests)]
        await asyncio.sleep(0.05)
        assert started == ["r0", "r1"]
        assert said == [("p2", "waiting for one of the operator's 2 Local analysis slots")]
        release.set()
        plans = await asyncio.wait_for(asyncio.gather(*runs), 5)
        assert started == ["r0", "r1", "r2"] and [p.run_id for p in plans] == ["r0", "r1", "r2"]

    asyncio.run(scenario())


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_local_analysis_slots_are_a_whole_number_of_at_least_one(value: str) -> None:
    with pytest.raises(SettingsError, match="EBB_LOCAL_ANALYSIS_RUNS"):
        OperatorSettings.from_env({"EBB_LOCAL_ANALYSIS_RUNS": value})


def test_the_local_engines_command_line_is_one_the_job_accepts() -> None:
    from ebb_operator.analysis.__main__ import parse_args

    for options in ("-XX:TieredStopAtLevel=1", "-Xss4m -XX:+UseSerialGC", ""):
        settings = OperatorSettings(local_analysis_java_options=options)
        argv = local_job_argv(Path("/tmp/r.json"), Path("/tmp/p.json"), settings)
        assert argv[1:3] == ["-m", "ebb_operator.analysis"]
        args = parse_args(argv[3:])
        assert (args.request, args.output) == (Path("/tmp/r.json"), Path("/tmp/p.json"))
        assert args.driver_java_options == (options or None)
