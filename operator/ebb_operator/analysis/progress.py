"""How far the run is, as its driver sees it: the job's current phase and Spark's tasks, published while
the job runs (a SparkApplication's driver keeps it in the run's ConfigMap, where the operator reads it
for the policy's `status.lastRun.progress`).

Spark's StatusTracker answers which jobs and stages exist and how many of their tasks are done; tasks are
counted over the stages started so far (a stage Spark skips, its data cached, never counts), so the
total grows as the run goes on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from pyspark import SparkContext, SparkStageInfo

from ebb_operator.models.retention_policy import RunProgress

log = logging.getLogger(__name__)

_stage: str | None = None  # what the job is doing (job.phase sets it)


def enter(what: str) -> None:
    global _stage
    _stage = what


def _started(stage: SparkStageInfo) -> bool:
    """A stage that ran tasks or runs them: not one waiting for its parents, nor one Spark skipped."""
    return stage.numCompletedTasks + stage.numActiveTasks + stage.numFailedTasks > 0


class Tasks:
    """Spark's tasks done and in all, over the stages started so far. Finished jobs and stages are asked
    about once, so a tick costs a few calls into the JVM whatever the number of jobs run before (a run of
    the Admin-API source runs dozens)."""

    def __init__(self) -> None:
        self._job_stages: dict[int, list[int]] = {}  # finished jobs: their stages
        self._finished: dict[int, tuple[int, int]] = {}  # finished stages: (done, total)

    def count(self, sc: SparkContext) -> tuple[int, int]:
        tracker = sc.statusTracker()
        stage_ids: set[int] = set()
        for job in tracker.getJobIdsForGroup():
            stages = self._job_stages.get(job)
            if stages is None:
                info = tracker.getJobInfo(job)
                if info is None:
                    continue
                stages = list(info.stageIds)
                if info.status in ("SUCCEEDED", "FAILED"):
                    self._job_stages[job] = stages
            stage_ids.update(stages)
        done = total = 0
        for stage_id in sorted(stage_ids):
            counted = self._finished.get(stage_id)
            if counted is None:
                stage = tracker.getStageInfo(stage_id)
                if stage is None or not _started(stage):
                    continue
                counted = (stage.numCompletedTasks, stage.numTasks)
                if stage.numActiveTasks == 0 and stage.numCompletedTasks == stage.numTasks:
                    self._finished[stage_id] = counted
            done, total = done + counted[0], total + counted[1]
        return done, total


def snapshot(sc: SparkContext, tasks: Tasks | None = None) -> RunProgress:
    done, total = (tasks or Tasks()).count(sc)
    return RunProgress(stage=_stage, tasks_done=done, tasks_total=total)


class ProgressReporter:
    """Publishes `snapshot` every `every` seconds while it changes, and once more at the end. A failed
    publication is logged and tried again at the next change: progress never fails a run."""

    def __init__(self, sc: SparkContext, publish: Callable[[RunProgress], None], every: float = 2.0) -> None:
        self.sc = sc
        self.publish = publish
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ebb-progress", daemon=True)
        self._last: RunProgress | None = None
        self._tasks = Tasks()

    def __enter__(self) -> ProgressReporter:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._tick()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._tick()

    def _tick(self) -> None:
        try:
            now = snapshot(self.sc, self._tasks)
            if now != self._last:
                self.publish(now)
                self._last = now
        except Exception as exc:  # py4j, the API server: the run goes on without its progress
            log.warning("cannot publish the run's progress: %s", exc)
