"""All partition logs of one data directory (Kafka's LogManager): topics, checkpoints, retention, cleaner.

Ebb has no controller quorum, so the LogManager also keeps the topic list in the data directory, in
``ebb-topics.json`` (written atomically: tmp, fsync, rename, directory fsync)::

    {"version": 1,
     "topics": {"orders": {"id": "6f1c...-uuid", "partitions": 3,
                           "config": {"retention.ms": "3600000"}}}}

``config`` holds only the topic's overrides, as given (strings); the effective config is the broker
defaults overlaid with them. The file is written before partition directories are created and after they
are removed, so a crash in between leaves at worst an empty partition to recreate or a stray directory
(ignored at startup, removed before a topic of that name is created again). A name in the file that is
not a legal topic name (``topic_names``; an earlier version let ``"evil\n"`` in) is reported and skipped
at startup, its directories left alone: it never stops the broker.

Topics are created in batches (``create_topics``: one CreateTopics or Metadata request): every topic is
checked, then the partition budget for the whole batch, before anything is written; ``ebb-topics.json``
is written once per batch, then the partitions are opened without the manager's lock, so the event loop
is never held while thousands of directories are made. Batches run one at a time (the creation lock); a
topic appears in ``topics()`` once all its partitions are open.

Checkpoints (Kafka's names and text format): ``recovery-point-offset-checkpoint`` and
``replication-offset-checkpoint`` (the high watermark) on ``checkpoint()`` and ``close()``;
``log-start-offset-checkpoint`` (sparse: only partitions whose log start offset is above their first
segment's base, as Kafka) also after every retention pass that deleted something and after every
DeleteRecords request that moved a log start offset (``delete_records``: once per request), so an
acknowledged deletion survives a crash (Kafka defers it to the next 60 s checkpoint). ``close()`` writes
the clean-shutdown marker last; ``open()`` removes it once the logs are loaded, so a later crash is detected.

Thread-safety: topic changes take the manager's lock; ``run_retention`` and ``run_cleaner`` take a
maintenance lock so they never overlap, and otherwise only take each log's own lock, so they may run in a
worker thread while the event loop serves produce and fetch. Checkpoint files are written under a
checkpoint lock, which also covers listing the logs they describe, so a checkpoint never writes the
entries of a topic deleted meanwhile (a topic re-created with that name would inherit its recovery point
and log start offset).

Lock order, the one every path follows (a path may skip a lock, never take an earlier one while holding
a later one; the event loop and worker threads (checkpoint, retention, cleaner, flush, DeleteRecords,
topic creation) share them, and the reverse order once deadlocked close() against the periodic
checkpoint)::

    _creation  ->  _maintenance  ->  _checkpoint_lock  ->  _lock (the logs and topics)  ->  each Log's lock

``close()`` and ``delete_topic()`` take ``_maintenance``, ``_checkpoint_lock`` and ``_lock`` in that order; a
checkpoint takes the last three; topic creation holds ``_creation`` throughout and ``_lock`` only to write
and publish; ``delete_records`` moves log start offsets under each log's lock, then writes the checkpoint.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ebb_broker.log import files, topic_names
from ebb_broker.log.checkpoint import atomic_write, fsync_dir, read_offsets, write_offsets
from ebb_broker.log.cleaner_manager import CleanerManager, CleanerReport
from ebb_broker.log.errors import (
    CorruptCheckpointError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    LogError,
    PartitionLimitError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
    shown,
)
from ebb_broker.log.file_handles import FILES_PER_PARTITION, descriptor_limit, segment_file_budget
from ebb_broker.log.log import Log, LogStartMove, RecordsDeleted, wall_clock_ms
from ebb_broker.log.log_config import LONG_MAX, LogConfig, LogManagerConfig
from ebb_broker.log.retention import CommittedOffsets, RetentionResult

log = logging.getLogger(__name__)

TOPICS_FILE_VERSION = 1


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    partitions: int
    overrides: dict[str, str]
    topic_id: uuid.UUID


@dataclass(frozen=True)
class NewTopic:
    """One topic of a ``create_topics`` batch."""

    name: str
    partitions: int
    overrides: Mapping[str, str] = field(default_factory=dict)


class _BatchConfigs:
    """Each distinct set of overrides of a batch parsed once: auto-created topics all share the empty one,
    and 5,000 pydantic parses of it held the GIL for 1.5 s."""

    def __init__(self, config: LogManagerConfig) -> None:
        self._config = config
        self._parsed: dict[frozenset[tuple[str, str]], LogConfig] = {}

    def get(self, overrides: Mapping[str, str]) -> LogConfig:
        key = frozenset(overrides.items())
        if key not in self._parsed:
            self._parsed[key] = self._config.topic_config(overrides)
        return self._parsed[key]


@dataclass
class RetentionReport:
    """One retention pass over every log."""

    partitions: dict[tuple[str, int], RetentionResult] = field(default_factory=dict)
    files_removed: int = 0

    @property
    def segments_deleted(self) -> int:
        return sum(r.segments for r in self.partitions.values())

    @property
    def bytes_deleted(self) -> int:
        return sum(r.bytes for r in self.partitions.values())


class FileReaper:
    """Removes files renamed to ``.deleted`` once file.delete.delay.ms has passed (Kafka's scheduler)."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._due: list[tuple[int, Path]] = []
        self._lock = threading.Lock()

    def schedule(self, paths: list[Path], delay_ms: int) -> None:
        if delay_ms <= 0:
            for p in paths:
                p.unlink(missing_ok=True)
            return
        due = self._clock() + delay_ms
        with self._lock:
            self._due += [(due, p) for p in paths]

    def reap(self) -> int:
        now = self._clock()
        with self._lock:
            ready = [p for due, p in self._due if due <= now]
            self._due = [(due, p) for due, p in self._due if due > now]
        for p in ready:
            p.unlink(missing_ok=True)
        return len(ready)

    def pending(self) -> list[Path]:
        with self._lock:
            return [p for _due, p in self._due]


class LogManager:
    """All partition logs of one data directory; owns checkpoints, retention and the cleaner schedule."""

    def __init__(
        self,
        data_dir: Path,
        config: LogManagerConfig,
        clock: Callable[[], int],
    ) -> None:
        self.data_dir = data_dir
        self.config = config
        self.clock = clock
        self.reaper = FileReaper(clock)
        self._topics: dict[str, TopicMetadata] = {}
        self._logs: dict[tuple[str, int], Log] = {}
        self._lock = threading.RLock()
        self._maintenance = threading.Lock()
        self._checkpoint_lock = threading.Lock()
        self._creation = threading.Lock()
        # The batch being created: written to ebb-topics.json, not yet in `_topics` (see create_topics).
        self._creating: dict[str, TopicMetadata] = {}
        self._closed = False
        # Told of every move of any log's start offset (``Log.on_log_start_move``, same rules).
        self.on_log_start_move: Callable[[LogStartMove], None] | None = None
        self.cleaner = CleanerManager(
            data_dir, self.logs, clock, dedupe_buffer_size=config.cleaner_dedupe_buffer_size
        )

    # -- open / close -------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        data_dir: Path,
        config: LogManagerConfig,
        *,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> LogManager:
        """Load every topic of ``data_dir`` (creating it if needed), recovering after an unclean shutdown."""
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        mgr = cls(data_dir, config, clock)
        marker = data_dir / files.CLEAN_SHUTDOWN
        clean = marker.exists()
        if not clean:
            log.info("no clean-shutdown marker in %s: recovering from the recovery points", data_dir)
        for entry in data_dir.iterdir():
            if entry.is_dir() and entry.name.endswith(files.DELETE_DIR_SUFFIX):
                shutil.rmtree(entry, ignore_errors=True)
        mgr._topics = mgr._read_topics()
        try:
            recovery = read_offsets(data_dir / files.RECOVERY_POINT_CHECKPOINT)
        except CorruptCheckpointError as exc:
            # As Kafka: recovering every segment from its start is slower, never wrong.
            log.warning("%s; recovering every segment from offset 0", exc)
            recovery = {}
        # A corrupt log-start-offset-checkpoint is NOT reset (Kafka would fall back to the first segment's
        # base, resurrecting deleted records): read_offsets raises and the broker refuses to start.
        starts = read_offsets(data_dir / files.LOG_START_OFFSET_CHECKPOINT)
        mgr._drop_invalid_overrides()
        for meta in mgr._topics.values():
            tconf = config.topic_config(meta.overrides)
            for p in range(meta.partitions):
                mgr._logs[(meta.name, p)] = mgr._open_log(
                    meta.name, p, tconf, recovery.get((meta.name, p), 0), starts.get((meta.name, p), 0), clean
                )
        known = {files.partition_dir(data_dir, t, p).name for t, p in mgr._logs}
        for entry in data_dir.iterdir():
            if entry.is_dir() and files.parse_partition_dir(entry.name) and entry.name not in known:
                log.warning("ignoring %s: not a partition of any topic in %s", entry, files.TOPICS_FILE)
        total = sum(t.partitions for t in mgr._topics.values())
        if total * FILES_PER_PARTITION > segment_file_budget():
            log.warning(
                "%d partitions exceed what the descriptor limit (%d) keeps open at once: segment files are "
                "opened and closed on demand, which is slower; raise ulimit -n",
                total,
                descriptor_limit(),
            )
        mgr.cleaner.load()
        marker.unlink(missing_ok=True)
        mgr.checkpoint()
        return mgr

    def _open_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig,
        recovery_point: int,
        log_start_offset: int,
        clean: bool,
    ) -> Log:
        lg = Log.open(
            files.partition_dir(self.data_dir, topic, partition),
            topic,
            partition,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            clean_shutdown=clean,
            clock=self.clock,
            schedule_delete=self.reaper.schedule,
        )
        lg.on_log_start_move = self._log_start_move
        return lg

    def _log_start_move(self, move: LogStartMove) -> None:
        if self.on_log_start_move is not None:
            self.on_log_start_move(move)

    def delete_records(
        self, offsets: Mapping[tuple[str, int], int]
    ) -> dict[tuple[str, int], RecordsDeleted | LogError]:
        """DeleteRecords (KIP-107) of many partitions: each log start offset moved under its log's lock
        (-1: to the high watermark), then log-start-offset-checkpoint written once (fsynced) for every move,
        before the caller answers: an acknowledged deletion survives a crash (Kafka defers it to the next
        periodic checkpoint). Once per request, not per partition: 100 partitions took 100 fsynced writes,
        90 ms. A partition's engine error is its result; the checkpoint is written for the moves made even
        when something else raises."""
        results: dict[tuple[str, int], RecordsDeleted | LogError] = {}
        try:
            for (topic, partition), offset in offsets.items():
                try:
                    results[(topic, partition)] = self.get_log(topic, partition).delete_records(offset)
                except LogError as exc:
                    results[(topic, partition)] = exc
        finally:
            if any(isinstance(r, RecordsDeleted) and r.count for r in results.values()):
                self._write_log_start_offsets()
        return results

    def close(self) -> None:
        """Flush, checkpoint, then write the clean-shutdown marker."""
        with self._maintenance, self._checkpoint_lock, self._lock:  # the lock order of the module docstring
            if self._closed:
                return
            for lg in self._logs.values():
                lg.close()
            self._write_checkpoints_locked()
            self.cleaner.write_checkpoint()
            atomic_write(self.data_dir / files.CLEAN_SHUTDOWN, b"")
            self._closed = True

    def abandon(self) -> None:
        """Drop file descriptors without flushing or checkpointing: what kill -9 leaves (tests)."""
        with self._lock:
            for lg in self._logs.values():
                lg.abandon()
            self._closed = True

    # -- topics ---------------------------------------------------------------------------------------------

    def _read_topics(self) -> dict[str, TopicMetadata]:
        path = self.data_dir / files.TOPICS_FILE
        if not path.exists():
            return {}
        doc = json.loads(path.read_text())
        if doc.get("version") != TOPICS_FILE_VERSION:
            raise InvalidConfigError(f"{path}: unknown version {doc.get('version')!r}")
        out = {}
        for name, t in doc["topics"].items():
            reason = topic_names.invalid_reason(name)
            if reason is not None:
                log.error("%s: skipping topic %r (its directories stay as they are): %s", path, name, reason)
                continue
            out[name] = TopicMetadata(name, int(t["partitions"]), dict(t["config"]), uuid.UUID(t["id"]))
        return out

    def _drop_invalid_overrides(self) -> None:
        """A stored override this version refuses (e.g. a LONG out of range that an older version took)
        must not stop the broker from starting: it is dropped, with a warning naming it, and the topic
        falls back to the broker default for that key."""
        changed = False
        for name, meta in list(self._topics.items()):
            try:
                self.config.topic_config(meta.overrides)
                continue
            except InvalidConfigError:
                pass
            kept: dict[str, str] = {}
            for key, value in meta.overrides.items():
                try:
                    self.config.topic_config({**kept, key: value})
                    kept[key] = value
                except InvalidConfigError as exc:
                    log.warning("topic %s: dropping the stored override %s=%s: %s", name, key, value, exc)
            self._topics[name] = TopicMetadata(name, meta.partitions, kept, meta.topic_id)
            changed = True
        if changed:
            self._write_topics(self._topics)

    def _write_topics(self, topics: Mapping[str, TopicMetadata]) -> None:
        """Write ``topics`` and the batch being created (so a config change written meanwhile keeps it)."""
        everything = {**self._creating, **topics}
        doc = {
            "version": TOPICS_FILE_VERSION,
            "topics": {
                t.name: {"id": str(t.topic_id), "partitions": t.partitions, "config": t.overrides}
                for t in sorted(everything.values(), key=lambda t: t.name)
            },
        }
        atomic_write(self.data_dir / files.TOPICS_FILE, (json.dumps(doc, indent=1) + "\n").encode())

    def topics(self) -> dict[str, TopicMetadata]:
        with self._lock:
            return dict(self._topics)

    def create_topic(
        self, name: str, partitions: int, overrides: Mapping[str, str] | None = None
    ) -> TopicMetadata:
        """Create ``name`` with ``partitions`` empty logs; raises what ``create_topics`` reports for it."""
        result = self.create_topics([NewTopic(name, partitions, dict(overrides or {}))])[name]
        if isinstance(result, LogError):
            raise result
        return result

    def create_topics(
        self, batch: Sequence[NewTopic], *, validate_only: bool = False
    ) -> dict[str, TopicMetadata | LogError]:
        """Create a batch of topics (one request's); per name its metadata or why it was refused.

        Each topic is checked on its own (InvalidTopicError for an illegal name or a collision with an
        existing topic or an earlier one of the batch, TopicExistsError, InvalidPartitionsError,
        InvalidConfigError); then the partitions of all the others are checked against the budget at
        once (PartitionLimitError for each of them, nothing created). With ``validate_only`` nothing is
        written. Otherwise ``ebb-topics.json`` is written once, the partitions are opened outside the
        manager's lock, and the topics appear together; an OSError half-way (disk full, descriptors)
        takes the whole batch back out and is raised."""
        configs = _BatchConfigs(self.config)
        with self._creation:
            results, new = self._check_new_topics(batch, configs)
            if validate_only or not new:
                return {**results, **new}
            with self._lock:
                self._write_topics({**self._topics, **new})
                self._creating = new
            opened: dict[tuple[str, int], Log] = {}
            try:
                for meta in new.values():
                    self._remove_stray_dirs(meta.name, range(meta.partitions))
                    tconf = configs.get(meta.overrides)
                    for p in range(meta.partitions):
                        opened[(meta.name, p)] = self._open_log(meta.name, p, tconf, 0, 0, True)
            except OSError:
                # Out of disk or descriptors half-way: take the batch back out, so the names stay usable
                # and a restart does not trip over them.
                log.exception("creating %s failed; removing them again", ", ".join(new))
                with self._lock:
                    self._creating = {}
                    self._write_topics(self._topics)
                for lg in opened.values():
                    lg.abandon()
                for meta in new.values():
                    self._remove_stray_dirs(meta.name, range(meta.partitions))
                raise
            with self._lock:
                self._logs.update(opened)
                self._topics.update(new)
                self._creating = {}
            fsync_dir(self.data_dir)
            return {**results, **new}

    def _check_new_topics(
        self, batch: Sequence[NewTopic], configs: _BatchConfigs
    ) -> tuple[dict[str, LogError], dict[str, TopicMetadata]]:
        """The refusals and the topics to create, in batch order; the caller holds the creation lock."""
        refused: dict[str, LogError] = {}
        new: dict[str, TopicMetadata] = {}
        existing = self.topics()
        taken = {topic_names.collision_key(n): n for n in existing}
        for t in batch:
            reason = topic_names.invalid_reason(t.name)
            if reason is not None:
                refused[t.name] = InvalidTopicError(reason)
            elif t.name in existing or t.name in new:
                refused[t.name] = TopicExistsError(f"Topic '{t.name}' already exists.")
            elif (other := taken.get(topic_names.collision_key(t.name))) is not None:
                refused[t.name] = InvalidTopicError(f"Topic '{t.name}' collides with existing topic: {other}")
            elif t.partitions < 1:
                refused[t.name] = InvalidPartitionsError(
                    f"topic {t.name} needs at least one partition, got {t.partitions}"
                )
            else:
                overrides = {k: str(v) for k, v in t.overrides.items()}
                try:
                    configs.get(overrides)
                except InvalidConfigError as exc:
                    refused[t.name] = exc
                    continue
                new[t.name] = TopicMetadata(t.name, t.partitions, overrides, uuid.uuid4())
                taken[topic_names.collision_key(t.name)] = t.name
        try:
            self.check_new_partitions(sum(m.partitions for m in new.values()))
        except PartitionLimitError as exc:
            refused.update(dict.fromkeys(new, exc))
            new = {}
        return refused, new

    def create_partitions(self, name: str, total: int) -> None:
        with self._creation, self._lock:
            meta = self._meta(name)
            if total <= meta.partitions:
                raise InvalidPartitionsError(
                    f"topic {name} has {meta.partitions} partitions; a new count must be larger, got {total}"
                )
            self.check_new_partitions(total - meta.partitions)
            new = TopicMetadata(name, total, meta.overrides, meta.topic_id)
            self._write_topics({**self._topics, name: new})
            self._topics[name] = new
            tconf = self.config.topic_config(meta.overrides)
            self._remove_stray_dirs(name, range(meta.partitions, total))
            for p in range(meta.partitions, total):
                self._logs[(name, p)] = self._open_log(name, p, tconf, 0, 0, True)

    def partition_count(self) -> int:
        with self._lock:
            return sum(t.partitions for t in self._topics.values())

    def check_new_partitions(self, extra: int) -> None:
        """Raise PartitionLimitError unless ``extra`` more partitions fit: within max.partitions, and
        within the descriptor limit (each partition's active segment keeps three files open; a quarter of
        the limit is left to connections and fetches). Called before anything is written, so a refused
        request leaves no trace; a restart never checks (segments open lazily, see file_handles)."""
        total = self.partition_count() + extra
        if total > self.config.max_partitions:
            raise PartitionLimitError(
                f"{extra} new partitions would make {total}, above this broker's max.partitions "
                f"({self.config.max_partitions})"
            )
        by_files = segment_file_budget() // FILES_PER_PARTITION
        if total > by_files:
            raise PartitionLimitError(
                f"{extra} new partitions would make {total}; the process's descriptor limit "
                f"({descriptor_limit()}, ulimit -n) serves at most {by_files}"
            )

    def _remove_stray_dirs(self, topic: str, partitions: range) -> None:
        """A directory left by a crash during delete_topic must not reappear inside a new topic."""
        for p in partitions:
            d = files.partition_dir(self.data_dir, topic, p)
            if d.exists():
                log.warning("removing stray %s before creating %s-%d afresh", d, topic, p)
                doomed = d.with_name(files.delete_dir_name(topic, p, uuid.uuid4().hex))
                d.replace(doomed)
                shutil.rmtree(doomed, ignore_errors=True)

    def delete_topic(self, name: str) -> None:
        # The lock order of the module docstring: run_retention and run_cleaner list the logs while
        # holding the maintenance lock, a checkpoint while holding the checkpoint lock.
        with self._maintenance, self._checkpoint_lock, self._lock:
            meta = self._meta(name)
            rest = {k: v for k, v in self._topics.items() if k != name}
            self._write_topics(rest)
            self._topics = rest
            for p in range(meta.partitions):
                lg = self._logs.pop((name, p))
                lg.abandon()
                doomed = lg.directory.with_name(files.delete_dir_name(name, p, uuid.uuid4().hex))
                lg.directory.replace(doomed)
                shutil.rmtree(doomed, ignore_errors=True)
            self.cleaner.forget(name)
            fsync_dir(self.data_dir)
            self._write_checkpoints_locked()

    def _meta(self, name: str) -> TopicMetadata:
        try:
            return self._topics[name]
        except KeyError:
            raise UnknownTopicOrPartitionError(f"unknown topic {shown(name)}") from None

    def topic_config(self, name: str) -> LogConfig:
        with self._lock:
            return self.config.topic_config(self._meta(name).overrides)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """producer.id.expiration.ms over every log: forget producers idle that long (none with an open
        transaction). Returns how many went."""
        return sum(lg.remove_expired_producers(now_ms, expiration_ms) for lg in self.logs())

    def update_defaults(self, config: LogManagerConfig) -> None:
        """New broker-wide defaults (dynamic broker configs): every topic without its own override of a
        key takes the new value at once, as Kafka's DynamicLogConfig reconfigures its logs. The cleaner's
        dedupe buffer is fixed at start."""
        with self._lock:
            configs = {name: config.topic_config(meta.overrides) for name, meta in self._topics.items()}
            self.config = config
            for (topic, _p), lg in self._logs.items():
                lg.update_config(configs[topic])

    def alter_topic_config(self, name: str, overrides: Mapping[str, str | None]) -> LogConfig:
        """Set (or with None remove) overrides; validates the result first, so a bad value changes nothing."""
        with self._lock:
            meta = self._meta(name)
            merged = dict(meta.overrides)
            for k, v in overrides.items():
                if v is None:
                    merged.pop(k, None)
                else:
                    merged[k] = str(v)
            tconf = self.config.topic_config(merged)
            new = TopicMetadata(name, meta.partitions, merged, meta.topic_id)
            self._write_topics({**self._topics, name: new})
            self._topics[name] = new
            for p in range(meta.partitions):
                self._logs[(name, p)].update_config(tconf)
            return tconf

    def get_log(self, topic: str, partition: int) -> Log:
        try:
            return self._logs[(topic, partition)]
        except KeyError:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}") from None

    def logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def consumed_retention_groups(self) -> set[str]:
        """Every group some topic's consumed retention counts (``retention.commitoffset.groups`` of a
        topic with ``retention.commitoffset.ms`` set): the groups the committed-offsets snapshot needs."""
        return {
            g
            for lg in self.logs()
            if lg.partition == 0 and lg.config.delete and lg.config.retention_commitoffset_ms >= 0
            for g in lg.config.consumed_retention_groups
        }

    # -- maintenance ----------------------------------------------------------------------------------------

    def run_retention(self, committed: CommittedOffsets | None = None) -> RetentionReport:
        """One retention pass over every log (start-offset breach, KIP-68, size, time), then remove the
        files whose file.delete.delay.ms has passed. The broker calls this every
        log.retention.check.interval.ms, off the event loop, with a snapshot of the committed offsets of
        ``consumed_retention_groups()`` taken on the loop (None: not known yet, so consumed retention is
        skipped)."""
        report = RetentionReport()
        with self._maintenance:
            now = self.clock()
            for lg in self.logs():
                result = lg.delete_old_segments(now_ms=now, committed=committed)
                report.partitions[(lg.topic, lg.partition)] = result
            if report.segments_deleted:
                self._write_log_start_offsets()
            report.files_removed = self.reaper.reap()
        return report

    def run_cleaner(self) -> CleanerReport | None:
        """Clean the filthiest compacted log, if any is eligible (see cleaner_manager)."""
        with self._maintenance:
            report = self.cleaner.clean_filthiest()
            self.reaper.reap()
            return report

    def flush_dirty_logs(self) -> int:
        """Kafka's LogManager.flushDirtyLogs: fsync every log whose ``flush.ms`` passed since its last flush
        and that has unflushed records. The broker calls this every log.flush.scheduler.interval.ms, off
        the event loop; logs left at the default flush.ms (never) are skipped without their lock.
        Returns how many logs were flushed."""
        now = self.clock()
        return sum(1 for lg in self.logs() if lg.config.flush_ms < LONG_MAX and lg.flush_if_due(now))

    def checkpoint(self) -> None:
        """Flush every log, then write the recovery-point, high-watermark and log-start checkpoints."""
        for lg in self.logs():
            lg.flush()
        self._write_checkpoints()

    def _write_checkpoints(self) -> None:
        with self._checkpoint_lock:
            self._write_checkpoints_locked()

    def _write_checkpoints_locked(self) -> None:
        """The caller holds the checkpoint lock (and may hold the manager's lock: it is re-entrant)."""
        logs = self.logs()
        write_offsets(
            self.data_dir / files.RECOVERY_POINT_CHECKPOINT,
            {(lg.topic, lg.partition): lg.recovery_point for lg in logs},
        )
        write_offsets(
            self.data_dir / files.REPLICATION_OFFSET_CHECKPOINT,
            {(lg.topic, lg.partition): lg.high_watermark for lg in logs},
        )
        self._write_log_start_offsets_locked(logs)

    def _write_log_start_offsets(self) -> None:
        with self._checkpoint_lock:
            self._write_log_start_offsets_locked(self.logs())

    def _write_log_start_offsets_locked(self, logs: list[Log]) -> None:
        entries = {}
        for lg in logs:
            first = lg.local.segments.first.base_offset
            if lg.log_start_offset > first:
                entries[(lg.topic, lg.partition)] = lg.log_start_offset
        write_offsets(self.data_dir / files.LOG_START_OFFSET_CHECKPOINT, entries)
