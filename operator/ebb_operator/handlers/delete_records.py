"""DeleteRecords reconciliation: check the grant, plan (resolve -1), record, delete behind the guard.

Executed once. Nothing is sent to Kafka before the namespace's grant admits the request (topics, guard
None). The plan (concrete target offsets, log starts and bytes before) is written to status before any
deletion, so an operator killed mid-run resumes the recorded plan: DeleteRecords is idempotent and the
log start offset monotone (KIP-107), and no offset is ever re-resolved, so a restart never deletes
records produced after the first attempt. The guard is read right before each DeleteRecords request,
not at planning (a dry run, which sends none, reads it when it plans): a group that rewound its commit
since a RetentionPolicy's analysis holds its partition. After the deletion a timer follows
DescribeLogDirs until the brokers' retention passes have removed the segments, so `reclaimedBytes` is
what was really freed.

A request whose KafkaCluster or credentials Secret does not exist yet waits for it (Pending, reason
ClusterNotFound, retried with a backoff): GitOps tools apply objects in any order.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import kopf
from pydantic import ValidationError

from ebb_operator import kube, metrics
from ebb_operator.access import Forbidden
from ebb_operator.handlers import cluster
from ebb_operator.handlers.consumed_guard import blocking_groups
from ebb_operator.handlers.errors import ClusterNotFound, KafkaFailed
from ebb_operator.handlers.runtime import Runtime, runtime
from ebb_operator.handlers.settings import ANNOTATION_PREFIX, HANDLED_ANNOTATION
from ebb_operator.handlers.status import StatusWriter
from ebb_operator.kafka import (
    EARLIEST,
    LATEST,
    UNKNOWN_BROKER,
    ClusterAdmin,
    ClusterConfigError,
    ClusterConnection,
    DeleteRecordsResult,
    KafkaFailure,
    TopicCommits,
    TopicPartition,
)
from ebb_operator.models.common import GROUP, VERSION, ConditionStatus, now_rfc3339, parse_duration
from ebb_operator.models.delete_records import (
    CRD,
    HIGH_WATERMARK,
    TERMINAL_PHASES,
    DeleteRecordsSpec,
    DeleteRecordsStatus,
    Guard,
    PartitionResult,
    Phase,
    phase_from_conditions,
)
from ebb_operator.models.messages import EVENT_MESSAGE, PARTITION_MESSAGE, PROGRESS_MESSAGE, bounded
from ebb_operator.models.reasons import Reason

RESOURCE = kube.Resource.ebb(CRD.plural, CRD.kind)
KIND = CRD.kind
log = logging.getLogger(__name__)
# How long after its end a DeleteRecords keeps measuring what the brokers freed: Kafka checks retention
# every log.retention.check.interval.ms (default 5 min) and removes files file.delete.delay.ms later.
RECLAIM_WINDOW_SECONDS = 15 * 60
# A request waiting for its KafkaCluster or Secret looks again after 5 s, doubling up to 5 minutes.
WAIT_FIRST_SECONDS, WAIT_MAX_SECONDS = 5.0, 300.0


def _render(status: DeleteRecordsStatus) -> dict[str, Any]:
    status.phase = phase_from_conditions(status.conditions)
    return status.to_k8s()


def writer(body: kopf.Body, status: DeleteRecordsStatus) -> StatusWriter[DeleteRecordsStatus]:
    return StatusWriter(body, RESOURCE, status, render=_render)


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
            result.error = str(failure) if failure else "UNKNOWN_TOPIC_OR_PARTITION: partition not found"
        else:
            target = hw if p.offset == HIGH_WATERMARK else p.offset
            result.requested_offset = target
            if target > hw:
                # Kafka answers OFFSET_OUT_OF_RANGE above the high watermark; say so before sending.
                result.error = f"OFFSET_OUT_OF_RANGE: offset {target} is above the high watermark {hw}"
            elif blockers.get(tp):
                refuse(result, blockers[tp])
        results.append(result)
    return results


def refuse(result: PartitionResult, blockers: list[str]) -> None:
    """The guard refused the partition: `blockers` have not committed past its target."""
    result.refused = True
    result.error = f"GuardRefused: not consumed past {result.requested_offset} by {', '.join(blockers)}"


def guard_blockers(
    admin: ClusterAdmin, spec: DeleteRecordsSpec, targets: dict[TopicPartition, int]
) -> dict[TopicPartition, list[str]]:
    """Per partition, the groups that have not committed past its target (Consumed: every group that
    reads the topic; ConsumedBy: the named groups, a group without a commit holding it, except the groups
    `evicted` lists for that partition). Blocking:
    runs in a worker thread. The groups' commits on the topics cut come in batched OffsetFetch
    requests, sent with their DescribeGroups; share groups' start offsets in DescribeShareGroupOffsets."""
    if spec.guard is Guard.NONE or not targets:
        return {}
    # A share group's start offset is its commit (KIP-932: every record below it was acknowledged).
    topics = {tp.topic for tp in targets}
    if spec.guard is Guard.CONSUMED_BY:
        # The named groups, without ListGroups: it asks every broker, and one down would stop every run's
        # DeleteRecords. A share group is one with start offsets; Kafka answers any other id with none.
        groups = list(spec.consumed_by)
        descriptions, answered = admin.readers(groups, topics)
        shares = admin.share_group_readers(groups, topics)
        answered.update((g, found) for g, found in shares.items() if isinstance(found, KafkaFailure) or found)
    else:
        listing = admin.list_groups()
        share = {g.group_id for g in listing if g.is_share}
        descriptions, answered = admin.readers([g.group_id for g in listing if not g.is_share], topics)
        answered.update(admin.share_group_readers(share, topics))
    commits: dict[str, list[TopicCommits]] = {}
    for group, found in answered.items():
        if isinstance(found, KafkaFailure):
            raise KafkaFailed(f"cannot read the committed offsets of group {group}: {found}")
        commits[group] = found
    if spec.guard is not Guard.CONSUMED_BY:
        return blocking_groups(targets, commits, descriptions)
    # The groups a RetentionPolicy's budget evicted, on the partitions it evicted them from (ConsumedBy only).
    evicted = {TopicPartition(e.topic, e.partition): e.groups for e in spec.evicted}
    return blocking_groups(targets, commits, descriptions, spec.consumed_by, evicted)


class LookupRetriable(Exception):
    """A lookup of the plan answered a retriable error (a leader being elected, a broker restarting);
    `stale`: a leader the client's metadata does not know."""

    def __init__(self, message: str, stale: bool) -> None:
        super().__init__(message)
        self.stale = stale


def _plan(
    admin: ClusterAdmin, spec: DeleteRecordsSpec, retry: bool = False
) -> tuple[list[PartitionResult], int | None]:
    """The plan and the bytes of the partitions it cuts, over every replica (None: a broker did not
    answer). With `retry`, a retriable lookup error raises LookupRetriable rather than becoming the
    partition's error: the caller reads again until spec.timeout, as it retries the request's own
    retriable errors. Blocking: runs in a worker thread."""
    tps = [TopicPartition(p.topic, p.partition) for p in spec.partitions]
    metadata = admin.metadata({tp.topic for tp in tps})
    errors: dict[TopicPartition, KafkaFailure] = {}
    existing = []
    for tp in tps:
        topic = metadata.topics[tp.topic]
        if topic.error is not None:
            errors[tp] = topic.error
        elif tp.partition not in topic.partitions:
            errors[tp] = KafkaFailure(
                "UNKNOWN_TOPIC_OR_PARTITION", f"{tp.topic} has no partition {tp.partition}", False
            )
        else:
            existing.append(tp)
    starts = admin.offsets(existing, EARLIEST)
    ends = admin.offsets(existing, LATEST)
    for tp in existing:
        for found in (starts[tp], ends[tp]):
            if found.error is not None:
                errors[tp] = found.error
    moving = sorted(f"{tp.topic}-{tp.partition}: {e}" for tp, e in errors.items() if e.retriable)
    if retry and moving:
        stale = any(e.code == UNKNOWN_BROKER for e in errors.values())
        raise LookupRetriable(f"{len(moving)} partitions, e.g. {moving[0]}", stale)
    targets = {}
    for p in spec.partitions:
        tp = TopicPartition(p.topic, p.partition)
        target = ends[tp].offset if p.offset == HIGH_WATERMARK and tp in ends else p.offset
        if tp not in errors and target is not None:
            targets[tp] = target
    # The guard is read once per DeleteRecords request, right before it (`_guarded_delete`), so a rewind
    # since the plan holds its partition; reading it here as well would only double its cost. A dry run
    # sends no request: it reads the guard here, to report what would be refused.
    blockers = guard_blockers(admin, spec, targets) if spec.dry_run else {}
    plan = plan_partitions(
        spec,
        {tp: r.offset for tp, r in starts.items()},
        {tp: r.offset for tp, r in ends.items()},
        errors,
        blockers,
    )
    pending = {TopicPartition(r.topic, r.partition): r for r in plan if r.error is None}
    try:
        sizes = admin.log_dir_sizes(pending)
    except Exception as exc:  # a broker that does not answer (stopped, frozen): its replicas' size is
        # unknown, so what the deletion frees cannot be measured; the deletion itself does not need it
        log.info("bytes before the deletion not measured: %s", exc)
        return plan, None
    for tp, entry in pending.items():
        entry.bytes_before = sizes.get(tp, 0)
    return plan, sum(sizes.values())


def _pending(status: DeleteRecordsStatus) -> dict[TopicPartition, PartitionResult]:
    return {
        TopicPartition(r.topic, r.partition): r
        for r in status.partitions
        if r.error is None and r.low_watermark is None
    }


async def _delete(
    rt: Runtime, conn: ClusterConnection, spec: DeleteRecordsSpec, out: StatusWriter[DeleteRecordsStatus]
) -> None:
    """Send DeleteRecords for pending partitions, the guard checked again right before each request;
    retriable errors are retried until spec.timeout, each partition's shown in status meanwhile
    (`retrying`: KIP-107's answer waits for every live replica, so a follower that does not fetch
    times the request out until it is back or fenced)."""
    status = out.status
    deadline = time.monotonic() + parse_duration(spec.timeout).total_seconds()
    shown: list[tuple[str, int, str]] = []
    while pending := _pending(status):
        targets = {tp: r.requested_offset for tp, r in pending.items()}

        blockers, results = await rt.admins.call(
            conn, functools.partial(_guarded_delete, spec=spec, targets=targets)
        )
        retry = False
        for tp, entry in pending.items():
            entry.retrying = None
            if blockers.get(tp):
                refuse(entry, blockers[tp])
                continue
            result = results[tp]
            if result.error is None:
                entry.low_watermark = result.low_watermark
            elif result.error.retriable and time.monotonic() < deadline:
                entry.retrying = bounded(str(result.error), PARTITION_MESSAGE)
                retry = True
            else:
                entry.error = str(result.error)
        if retry:
            now = [(r.topic, r.partition, r.retrying) for r in status.partitions if r.retrying is not None]
            if now != shown:  # written when the set of errors changes, not at every try
                shown = now
                first = f"{now[0][0]}-{now[0][1]}: {now[0][2]}"
                await out.write(
                    ConditionStatus.UNKNOWN, Reason.RETRYING, f"retrying {len(now)} partitions, e.g. {first}"
                )
            await asyncio.sleep(0.5)


def _guarded_delete(
    admin: ClusterAdmin, *, spec: DeleteRecordsSpec, targets: dict[TopicPartition, int]
) -> tuple[dict[TopicPartition, list[str]], dict[TopicPartition, DeleteRecordsResult]]:
    """The guard read again, then DeleteRecords for the partitions it still admits, in one sitting."""
    blockers = guard_blockers(admin, spec, targets)
    allowed = {tp: o for tp, o in targets.items() if not blockers.get(tp)}
    return blockers, admin.delete_records(allowed)


def _cut_before(
    admin: ClusterAdmin, pending: dict[TopicPartition, PartitionResult]
) -> dict[TopicPartition, int]:
    """The log starts already at or past their target: what an attempt cut off between its request and
    its status write (kill -9, a lost leader Lease) deleted. Blocking: runs in a worker thread."""
    starts = admin.offsets(list(pending), EARLIEST)
    return {
        tp: r.offset
        for tp, r in starts.items()
        if r.error is None and r.offset is not None and r.offset >= pending[tp].requested_offset
    }


class Outcome(NamedTuple):
    """How a DeleteRecords ended: its Ready condition."""

    ready: ConditionStatus
    reason: Reason
    message: str


def _finish(status: DeleteRecordsStatus) -> Outcome:
    done = [r for r in status.partitions if r.low_watermark is not None]
    failed = [r for r in status.partitions if r.error is not None]
    status.deleted_records = sum(max(0, (r.low_watermark or 0) - (r.log_start_before or 0)) for r in done)
    status.completed_at = now_rfc3339()
    summary = f"{len(done)} of {len(status.partitions)} partitions cut, {status.deleted_records} records"
    if not failed:
        return Outcome(ConditionStatus.TRUE, Reason.SUCCEEDED, summary)
    first = f"{failed[0].topic}-{failed[0].partition}: {failed[0].error}"
    if done:
        return Outcome(
            ConditionStatus.FALSE, Reason.PARTIALLY_FAILED, f"{summary}; {len(failed)} failed, e.g. {first}"
        )
    reason = Reason.GUARD_REFUSED if all(r.refused for r in failed) else Reason.KAFKA_ERROR
    return Outcome(ConditionStatus.FALSE, reason, f"no partition cut; {first}")


def wait_seconds(retry: int) -> float:
    """The backoff of a request waiting for its cluster: 5 s, 10 s, 20 s, ... at most 5 minutes."""
    return min(WAIT_MAX_SECONDS, WAIT_FIRST_SECONDS * 2 ** min(retry, 16))


EXECUTE = "deleterecords-execute"


# Requests being run by this process now, by uid: by kopf's create handler or by the timer resuming one
# (only the leader runs either, so the process is the whole picture).
_running: set[str] = set()
# A request kopf should have run by now (its last attempt was due this long ago, or kopf recorded nothing
# on it since its creation this long ago) and that no handler of this process runs is resumed by the timer.
STALLED_AFTER_SECONDS = 60.0


@kopf.on.create(GROUP, VERSION, CRD.plural, id=EXECUTE)
@metrics.reconciles(KIND)
async def deleterecords_create(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Run the request once; on an operator restart mid-run, kopf calls this again and it resumes."""
    uid = str(body.metadata.uid)
    if uid in _running:  # the timer is resuming it: kopf calls again later, with what that run wrote
        raise kopf.TemporaryError("being resumed", delay=5)
    _running.add(uid)
    try:
        await _run(runtime(memo), body, retry)
    finally:
        _running.discard(uid)


async def _run(rt: Runtime, body: kopf.Body, retry: int) -> None:
    status = DeleteRecordsStatus.model_validate(dict(body.get("status") or {}))
    if status.phase in TERMINAL_PHASES:
        return
    out = writer(body, status)
    try:
        spec = DeleteRecordsSpec.model_validate(dict(body.spec))
        target = await cluster.resolve(rt, out.ref.namespace, spec.cluster_ref, spec.cluster)
        await asyncio.to_thread(target.access.check_delete_records, spec)
    except ClusterNotFound as exc:
        delay = wait_seconds(retry)
        await out.failed(exc, message=f"waiting: {exc}; looking again with a backoff (next in {delay:.0f}s)")
        raise kopf.TemporaryError(str(exc), delay=delay) from exc
    except (ValidationError, Forbidden, ClusterConfigError, cluster.ClusterUnreachable) as exc:
        await out.failed(exc)
        return
    await _execute(rt, out, spec, target.connection)


def _due_at(body: kopf.Body) -> datetime:
    """When kopf was last due to run the create handler: its recorded attempt's delay or start, else the
    object's creation."""
    recorded = body.metadata.annotations.get(f"{ANNOTATION_PREFIX}/{EXECUTE}")
    when = body.metadata.creation_timestamp
    if recorded:
        try:
            attempt = json.loads(recorded)
            when = attempt.get("delayed") or attempt.get("started") or when
        except ValueError:
            pass
    if not when:
        return datetime.now(UTC)
    return datetime.fromisoformat(str(when).replace("Z", "+00:00"))


def stalled(body: kopf.Body, now: datetime | None = None) -> bool:
    """A request whose status is not final that nothing will run: the timer finishes it, from what its
    status records (level-triggered, as a reconcile is; the cut is idempotent, KIP-107).

    - kopf recorded the creation as handled (it never calls the create handler again), yet the status is
      not final: another writer put an older view over it. An operator of a release without leader
      election, running beside this one while a rollout replaces it, does that: it was still retrying
      the request when this one finished it. If that writer also recorded an attempt of its own, the
      rule below applies: it may have stopped before making it, and this process's kopf never will.
    - Or kopf's attempt was due over STALLED_AFTER_SECONDS ago (or kopf recorded nothing on it since its
      creation that long ago) and no handler of this process runs it: an attempt a leader scheduled
      before it stopped, which its successor did not take up."""
    if (body.get("status") or {}).get("phase") in TERMINAL_PHASES or str(body.metadata.uid) in _running:
        return False
    annotations = body.metadata.annotations
    if HANDLED_ANNOTATION in annotations and f"{ANNOTATION_PREFIX}/{EXECUTE}" not in annotations:
        return True
    waited = ((now or datetime.now(UTC)) - _due_at(body)).total_seconds()
    return waited > STALLED_AFTER_SECONDS


async def _plan_within_timeout(
    rt: Runtime, conn: ClusterConnection, spec: DeleteRecordsSpec, out: StatusWriter[DeleteRecordsStatus]
) -> tuple[list[PartitionResult], int | None]:
    """The plan, read again while a lookup answers a retriable error, until spec.timeout; after it, those
    errors are the partitions' own (a topic that does not exist stays UNKNOWN_TOPIC_OR_PARTITION)."""
    deadline = time.monotonic() + parse_duration(spec.timeout).total_seconds()
    shown = None
    while True:
        retry = time.monotonic() < deadline
        try:
            return await rt.admins.call(conn, functools.partial(_plan, spec=spec, retry=retry))
        except LookupRetriable as exc:
            if (message := f"retrying the lookup of {exc}") != shown:
                shown = message
                await out.write(ConditionStatus.UNKNOWN, Reason.RETRYING, bounded(message, PROGRESS_MESSAGE))
            if exc.stale:  # in a thread: it waits for a call on this cluster's client to end
                await asyncio.to_thread(rt.admins.reset, conn)
            await asyncio.sleep(1)


async def _execute(
    rt: Runtime, out: StatusWriter[DeleteRecordsStatus], spec: DeleteRecordsSpec, conn: ClusterConnection
) -> None:
    status, body = out.status, out.body
    resumed = bool(status.partitions)  # the plan of an earlier attempt, of this process or another
    if not status.partitions:
        try:
            status.partitions, status.bytes_before = await _plan_within_timeout(rt, conn, spec, out)
        except Exception as exc:
            # A lookup failed before anything was deleted: say so, then retry the whole request later.
            message = f"cannot read cluster state, retrying: {exc}"
            status.partitions = []
            await out.write(ConditionStatus.UNKNOWN, Reason.PENDING, bounded(message, PROGRESS_MESSAGE))
            metrics.FAILURES.labels(KIND, Reason.CLUSTER_UNREACHABLE).inc()
            raise kopf.TemporaryError(message, delay=5) from exc
        status.partition_count = len(spec.partitions)
        status.started_at = now_rfc3339()
        if spec.dry_run:
            status.deleted_records = sum(
                max(0, r.requested_offset - (r.log_start_before or 0))
                for r in status.partitions
                if r.error is None
            )
            status.completed_at = now_rfc3339()
            refused = sum(1 for r in status.partitions if r.error)
            message = f"dry run: would delete {status.deleted_records} records; {refused} partitions refused"
            await out.write(ConditionStatus.TRUE, Reason.DRY_RUN, message)
            kopf.info(body, reason="DryRun", message=message)
            return
        # Record the plan before acting: a restart from here resumes exactly these target offsets.
        await out.write(
            ConditionStatus.UNKNOWN, Reason.RUNNING, f"deleting in {len(_pending(status))} partitions"
        )
    pending = _pending(status)
    if pending and resumed:
        # Read before sending again, so a partition is sent in one DeleteRecords request, not two, however
        # the earlier attempt ended (sending again would be harmless: DeleteRecords is idempotent, KIP-107).
        try:
            for tp, start in (await rt.admins.call(conn, lambda a: _cut_before(a, pending))).items():
                pending[tp].low_watermark = start
        except Exception as exc:  # not known: the requests below find out, idempotently
            log.info("log starts before resuming not read: %s", exc)
        pending = _pending(status)
    if pending:
        targets = ", ".join(f"{tp}<{r.requested_offset}" for tp, r in sorted(pending.items()))
        message = bounded(f"deleting records below {targets}", EVENT_MESSAGE)
        kopf.info(body, reason="DeletingRecords", message=message)
        try:
            await _delete(rt, conn, spec, out)
        except Exception as exc:
            message = f"cannot delete, retrying: {exc}"
            await out.write(ConditionStatus.UNKNOWN, Reason.RUNNING, bounded(message, PROGRESS_MESSAGE))
            raise kopf.TemporaryError(message, delay=5) from exc
    ready, reason, message = _finish(status)
    await out.write(ready, reason, message)
    metrics.RECORDS_DELETED.inc(status.deleted_records or 0)
    if ready is ConditionStatus.TRUE:
        kopf.info(body, reason="RecordsDeleted", message=message)
    else:
        metrics.FAILURES.labels(KIND, reason).inc()
        kopf.warn(body, reason=reason, message=bounded(message, EVENT_MESSAGE))


def _measuring(status: DeleteRecordsStatus) -> bool:
    """Finished, cut something, and within the window in which brokers remove the segments."""
    if status.phase not in (Phase.SUCCEEDED, Phase.PARTIALLY_FAILED) or not status.completed_at:
        return False
    if status.bytes_before is None or not any(r.low_watermark is not None for r in status.partitions):
        return False
    completed = datetime.strptime(status.completed_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - completed).total_seconds() < RECLAIM_WINDOW_SECONDS


async def measure_reclaimed(rt: Runtime, body: kopf.Body) -> None:
    """reclaimedBytes: the largest drop below bytesBefore DescribeLogDirs has shown since the cut."""
    status = DeleteRecordsStatus.model_validate(dict(body.get("status") or {}))
    if not _measuring(status):
        return
    spec = DeleteRecordsSpec.model_validate(dict(body.spec))
    target = await cluster.resolve(rt, body.metadata.namespace or "", spec.cluster_ref, spec.cluster)
    cut = [r for r in status.partitions if r.low_watermark is not None]
    tps: Iterable[TopicPartition] = [TopicPartition(r.topic, r.partition) for r in cut]
    sizes = await rt.admins.call(target.connection, lambda a: a.log_dir_sizes(tps))
    # Only the partitions cut: a partition the guard refused at the delete was measured before it too.
    # (An object planned by an operator before per-partition sizes has only the total.)
    known = [r.bytes_before for r in cut if r.bytes_before is not None]
    before = sum(known) if len(known) == len(cut) else status.bytes_before or 0
    freed = max(0, before - sum(sizes.values()))
    if freed > (status.reclaimed_bytes or 0):
        metrics.BYTES_RECLAIMED.inc(freed - (status.reclaimed_bytes or 0))
        patch = {"reclaimedBytes": freed, "reclaimedAt": now_rfc3339()}
        await asyncio.to_thread(kube.patch_status, writer(body, status).ref, patch)


async def deleterecords_reclaimed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Registered as a timer by handlers.register (its interval is an operator setting). It also finishes a
    request nothing else will (`stalled`); a failure is tried again at the next tick."""
    if stalled(body):
        uid = str(body.metadata.uid)
        log.info("DeleteRecords %s/%s: not finished; resuming", body.metadata.namespace, body.metadata.name)
        _running.add(uid)
        try:
            await _run(runtime(memo), body, retry=0)
        finally:
            _running.discard(uid)
        return
    try:
        await measure_reclaimed(runtime(memo), body)
    except Exception as exc:  # measuring is best effort: the deletion itself is done and reported
        log.debug(
            "reclaimedBytes of %s/%s not measured: %s", body.metadata.namespace, body.metadata.name, exc
        )
