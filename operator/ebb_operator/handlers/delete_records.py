"""DeleteRecords reconciliation: validate, plan (resolve -1, apply the guard), record, delete, report.

Executed once. The plan (concrete target offsets, guard refusals, log starts and bytes before) is
written to status before any deletion, so an operator killed mid-run resumes the recorded plan:
DeleteRecords is idempotent and the log start offset monotone (KIP-107), and no offset is ever
re-resolved, so a restart never deletes records produced after the first attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import kopf
from pydantic import ValidationError

from ebb_operator import metrics
from ebb_operator.handlers import kube
from ebb_operator.handlers.cluster import connection_for
from ebb_operator.handlers.consumed_guard import blocking_groups
from ebb_operator.kafka import (
    EARLIEST,
    LATEST,
    ClusterAdmin,
    ClusterConfigError,
    KafkaFailure,
    TopicPartition,
)
from ebb_operator.models.common import (
    GROUP,
    VERSION,
    ConditionStatus,
    now_rfc3339,
    parse_duration,
    set_condition,
)
from ebb_operator.models.delete_records import (
    CRD,
    HIGH_WATERMARK,
    TERMINAL_PHASES,
    DeleteRecordsSpec,
    DeleteRecordsStatus,
    Guard,
    PartitionResult,
    phase_from_conditions,
)

KIND = CRD.kind
log = logging.getLogger(__name__)


class _Run:
    """One execution: the object's identity, its parsed spec and the status being built."""

    def __init__(self, body: kopf.Body, spec: DeleteRecordsSpec, status: DeleteRecordsStatus) -> None:
        self.body = body
        self.spec = spec
        self.status = status
        self.generation = int(body.metadata.get("generation") or 1)
        self.ref = kube.ObjectRef(CRD.plural, body.metadata.namespace or "default", body.metadata.name or "")

    async def write(self, ready: ConditionStatus, reason: str, message: str) -> None:
        self.status.conditions = set_condition(
            self.status.conditions, "Ready", ready, reason, message, self.generation
        )
        self.status.phase = phase_from_conditions(self.status.conditions)
        self.status.observed_generation = self.generation
        await asyncio.to_thread(kube.patch_status, self.ref, self.status.to_k8s())


def plan_partitions(
    spec: DeleteRecordsSpec,
    log_starts: dict[TopicPartition, int | None],
    high_watermarks: dict[TopicPartition, int | None],
    lookup_errors: dict[TopicPartition, KafkaFailure],
    blockers: dict[TopicPartition, list[str]],
) -> list[PartitionResult]:
    """Per partition: the concrete target (-1 resolved to the high watermark) or why it is refused."""
    results = []
    for p in spec.partitions:
        tp = TopicPartition(p.topic, p.partition)
        hw, start = high_watermarks.get(tp), log_starts.get(tp)
        result = PartitionResult(
            topic=p.topic, partition=p.partition, requested_offset=p.offset, log_start_before=start
        )
        if tp in lookup_errors or hw is None or start is None:
            failure = lookup_errors.get(tp)
            result.error = str(failure) if failure else "UNKNOWN_TOPIC_OR_PART: partition not found"
        else:
            target = hw if p.offset == HIGH_WATERMARK else p.offset
            result.requested_offset = target
            if target > hw:
                # Kafka answers OFFSET_OUT_OF_RANGE above the high watermark; say so before sending.
                result.error = f"OFFSET_OUT_OF_RANGE: offset {target} is above the high watermark {hw}"
            elif blockers.get(tp):
                result.error = f"GuardRefused: not consumed past {target} by {', '.join(blockers[tp])}"
        results.append(result)
    return results


async def _plan(run: _Run, admin: ClusterAdmin) -> None:
    spec = run.spec
    tps = [TopicPartition(p.topic, p.partition) for p in spec.partitions]
    metadata = await asyncio.to_thread(admin.metadata, {tp.topic for tp in tps})
    errors: dict[TopicPartition, KafkaFailure] = {}
    existing = []
    for tp in tps:
        topic = metadata.topics[tp.topic]
        if topic.error is not None:
            errors[tp] = topic.error
        elif tp.partition not in topic.partitions:
            errors[tp] = KafkaFailure(
                "UNKNOWN_TOPIC_OR_PART", f"{tp.topic} has no partition {tp.partition}", False
            )
        else:
            existing.append(tp)
    starts = await asyncio.to_thread(admin.offsets, existing, EARLIEST)
    ends = await asyncio.to_thread(admin.offsets, existing, LATEST)
    for tp in existing:
        for found in (starts[tp], ends[tp]):
            if found.error is not None:
                errors[tp] = found.error
    blockers: dict[TopicPartition, list[str]] = {}
    if spec.guard is Guard.CONSUMED:
        groups = [g.group_id for g in await asyncio.to_thread(admin.list_groups)]
        committed = {g: await asyncio.to_thread(admin.committed_offsets, g) for g in groups}
        descriptions = await asyncio.to_thread(admin.describe_groups, groups)
        for p in spec.partitions:
            tp = TopicPartition(p.topic, p.partition)
            target = ends[tp].offset if p.offset == HIGH_WATERMARK and tp in ends else p.offset
            if target is not None:
                blockers[tp] = blocking_groups(tp, target, committed, descriptions)
    run.status.partitions = plan_partitions(
        spec,
        {tp: r.offset for tp, r in starts.items()},
        {tp: r.offset for tp, r in ends.items()},
        errors,
        blockers,
    )
    run.status.partition_count = len(spec.partitions)
    to_delete = list(_pending(run.status))
    run.status.bytes_before = sum((await asyncio.to_thread(admin.log_dir_sizes, to_delete)).values())


def _pending(status: DeleteRecordsStatus) -> dict[TopicPartition, PartitionResult]:
    return {
        TopicPartition(r.topic, r.partition): r
        for r in status.partitions
        if r.error is None and r.low_watermark is None
    }


async def _delete(run: _Run, admin: ClusterAdmin) -> None:
    """Send DeleteRecords for pending partitions, retrying retriable errors until spec.timeout."""
    deadline = time.monotonic() + parse_duration(run.spec.timeout).total_seconds()
    while pending := _pending(run.status):
        results = await asyncio.to_thread(
            admin.delete_records, {tp: r.requested_offset for tp, r in pending.items()}
        )
        retry = False
        for tp, result in results.items():
            entry = pending[tp]
            if result.error is None:
                entry.low_watermark = result.low_watermark
            elif result.error.retriable and time.monotonic() < deadline:
                retry = True
            else:
                entry.error = str(result.error)
        if retry:
            await asyncio.sleep(0.5)


def _finish(run: _Run, bytes_after: int | None) -> tuple[ConditionStatus, str, str]:
    done = [r for r in run.status.partitions if r.low_watermark is not None]
    failed = [r for r in run.status.partitions if r.error is not None]
    run.status.deleted_records = sum(max(0, (r.low_watermark or 0) - (r.log_start_before or 0)) for r in done)
    if bytes_after is not None and run.status.bytes_before is not None:
        run.status.reclaimed_bytes = max(0, run.status.bytes_before - bytes_after)
    run.status.completed_at = now_rfc3339()
    summary = (
        f"{len(done)} of {len(run.status.partitions)} partitions cut, {run.status.deleted_records} records"
    )
    if not failed:
        return ConditionStatus.TRUE, "Succeeded", summary
    first = f"{failed[0].topic}-{failed[0].partition}: {failed[0].error}"
    if done:
        return ConditionStatus.FALSE, "PartiallyFailed", f"{summary}; {len(failed)} failed, e.g. {first}"
    reason = (
        "GuardRefused" if all((r.error or "").startswith("GuardRefused") for r in failed) else "KafkaError"
    )
    return ConditionStatus.FALSE, reason, f"no partition cut; {first}"


@kopf.on.create(GROUP, VERSION, CRD.plural, id="deleterecords-execute")
async def deleterecords_create(body: kopf.Body, **_: Any) -> None:
    """Run the request once; on an operator restart mid-run, kopf calls this again and it resumes."""
    metrics.RECONCILES.labels(KIND).inc()
    status = DeleteRecordsStatus.model_validate(dict(body.get("status") or {}))
    if status.phase in TERMINAL_PHASES:
        return
    try:
        spec = DeleteRecordsSpec.model_validate(dict(body.spec))
    except ValidationError as exc:
        run = _Run(body, DeleteRecordsSpec.model_construct(partitions=[]), status)
        await run.write(ConditionStatus.FALSE, "InvalidSpec", str(exc))
        kopf.warn(body, reason="InvalidSpec", message=str(exc))
        metrics.FAILURES.labels(KIND, "InvalidSpec").inc()
        return
    run = _Run(body, spec, status)
    try:
        connection = await connection_for(spec.cluster, run.ref.namespace)
    except ClusterConfigError as exc:
        await run.write(ConditionStatus.FALSE, "ClusterUnreachable", str(exc))
        kopf.warn(body, reason="ClusterUnreachable", message=str(exc))
        metrics.FAILURES.labels(KIND, "ClusterUnreachable").inc()
        return
    admin = ClusterAdmin(connection, request_timeout=min(30.0, parse_duration(spec.timeout).total_seconds()))
    try:
        await _execute(run, admin)
    finally:
        admin.close()


async def _execute(run: _Run, admin: ClusterAdmin) -> None:
    body, status = run.body, run.status
    if not status.partitions:
        try:
            await _plan(run, admin)
        except Exception as exc:
            # A lookup failed before anything was deleted: say so, then retry the whole request later.
            message = f"cannot read cluster state, retrying: {exc}"
            run.status.partitions = []
            await run.write(ConditionStatus.UNKNOWN, "Pending", message[:2048])
            metrics.FAILURES.labels(KIND, "ClusterUnreachable").inc()
            raise kopf.TemporaryError(message, delay=5) from exc
        status.started_at = now_rfc3339()
        if run.spec.dry_run:
            status.deleted_records = sum(
                max(0, r.requested_offset - (r.log_start_before or 0))
                for r in status.partitions
                if r.error is None
            )
            status.completed_at = now_rfc3339()
            refused = sum(1 for r in status.partitions if r.error)
            message = f"dry run: would delete {status.deleted_records} records; {refused} partitions refused"
            await run.write(ConditionStatus.TRUE, "DryRun", message)
            kopf.info(body, reason="DryRun", message=message)
            return
        # Record the plan before acting: a restart from here resumes exactly these target offsets.
        await run.write(ConditionStatus.UNKNOWN, "Running", f"deleting in {len(_pending(status))} partitions")
    pending = _pending(status)
    if pending:
        targets = ", ".join(f"{tp}<{r.requested_offset}" for tp, r in sorted(pending.items()))
        kopf.info(body, reason="DeletingRecords", message=f"deleting records below {targets}"[:1024])
        await _delete(run, admin)
    try:
        sizes = await asyncio.to_thread(
            admin.log_dir_sizes, [TopicPartition(r.topic, r.partition) for r in status.partitions]
        )
        bytes_after: int | None = sum(sizes.values())
    except Exception as exc:
        log.warning("DescribeLogDirs failed after deletion, reclaimedBytes left unset: %s", exc)
        bytes_after = None
    ready, reason, message = _finish(run, bytes_after)
    await run.write(ready, reason, message)
    metrics.RECORDS_DELETED.inc(status.deleted_records or 0)
    metrics.BYTES_RECLAIMED.inc(status.reclaimed_bytes or 0)
    if ready is ConditionStatus.TRUE:
        kopf.info(body, reason="RecordsDeleted", message=message)
    else:
        metrics.FAILURES.labels(KIND, reason).inc()
        kopf.warn(body, reason=reason, message=message[:1024])
