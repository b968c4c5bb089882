"""Property test: random appends, DeleteRecords, retention passes, cleanings, crashes and restarts
against a simple model of what a consumer must see.

The model keeps every acknowledged record. After every step the log, read like a consumer reads it, must
show: only acknowledged records, unchanged, at their offsets (nothing invented or corrupted); nothing below
the log start offset (no deleted record visible); the newest record of every key that is still above the
log start offset (compaction keeps the latest value; a key whose newest record is a tombstone shows that
tombstone or, once its horizon has passed, nothing); the log end offset of the model. Consumed retention
(KIP-68) runs with every pass and may never move the log start offset past the slowest group's commit.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ebb_broker.config import BrokerConfig
from ebb_broker.log import RecordsDeleted
from ebb_broker.log.compression import Compression
from ebb_broker.log.log_manager import LogManager
from ebb_broker.log.records import NewRecord, build_batch
from ebb_broker.log.retention import CommittedOffsets
from tests.unit.broker.log.log_helpers import Clock, read_all

KEYS = [b"a", b"b", b"c", b"d", b"e"]
TOPIC_CONFIG = {
    "cleanup.policy": "compact,delete",
    "segment.bytes": "400",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "0",
    "retention.ms": "-1",
    "retention.commitoffset.ms": "0",  # KIP-68: consumed data goes as soon as it is older than now
    "retention.commitoffset.groups": "g1,g2",  # g3 commits too, and never counts
    "index.interval.bytes": "64",
}
CODECS = list(Compression)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ebb-prop-"))
        self.clock = Clock()
        self.config = BrokerConfig.parse({}).log_manager_config()
        self.mgr = LogManager.open(self.dir, self.config, clock=self.clock)
        self.records: dict[int, tuple[bytes, bytes | None]] = {}
        self.start = 0
        self.next = 0
        self.counter = 0
        self.committed: dict[str, int] | None = None  # what the group coordinator would answer

    def snapshot(self) -> CommittedOffsets:
        """What the group coordinator hands the retention pass (unknown: None)."""
        if self.committed is None:
            return CommittedOffsets(known=False)
        return CommittedOffsets({g: {("p", 0): offset} for g, offset in self.committed.items()})

    @initialize()
    def create(self) -> None:
        self.mgr.create_topic("p", 1, TOPIC_CONFIG)

    @property
    def log(self):  # type: ignore[no-untyped-def]
        return self.mgr.get_log("p", 0)

    @rule(
        keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=4),
        tombstone=st.booleans(),
        codec=st.sampled_from(CODECS),
    )
    def append(self, keys: list[bytes], tombstone: bool, codec: Compression) -> None:
        recs = []
        for i, key in enumerate(keys):
            self.counter += 1
            value = None if tombstone and i == len(keys) - 1 else b"value-%d" % self.counter
            recs.append(NewRecord(key, value, timestamp=self.clock.now))
        info = self.log.append(build_batch(recs, compression=codec))
        assert info.base_offset == self.next
        for i, r in enumerate(recs):
            self.records[self.next + i] = (r.key, r.value)  # type: ignore[assignment]
        self.next += len(recs)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.one_of(st.just(-1), st.integers(0, self.next)))
        (result,) = self.mgr.delete_records({("p", 0): target}).values()  # durable before it returns
        assert isinstance(result, RecordsDeleted)
        low = result.low_watermark
        self.start = max(self.start, self.next if target == -1 else target)
        assert low == self.start

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        """A group commits, maybe past the log end, as any client may (or the coordinator cannot tell:
        None)."""
        if data.draw(st.booleans()):
            self.committed = None
            return
        group = data.draw(st.sampled_from(["g1", "g2", "g3"]))
        self.committed = {**(self.committed or {}), group: data.draw(st.integers(0, self.next + 3))}

    @rule()
    def retention(self) -> None:
        self.clock.advance(1)
        self.mgr.run_retention(self.snapshot())
        # KIP-68 may only move the log start up to the slower of g1 and g2, once both committed within
        # the log; g3 is not named by retention.commitoffset.groups
        counted = [o for g, o in (self.committed or {}).items() if g in ("g1", "g2")]
        consumed = len(counted) == 2 and max(counted) <= self.next
        allowed = max(self.start, min(counted)) if consumed else self.start
        assert self.log.log_start_offset <= allowed, (self.log.log_start_offset, allowed, self.committed)
        self.start = self.log.log_start_offset

    @rule(advance=st.integers(0, 2000))
    def clean(self, advance: int) -> None:
        self.clock.advance(advance)
        self.mgr.run_cleaner()

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def crash(self) -> None:
        self.mgr.abandon()
        self.mgr = LogManager.open(self.dir, self.config, clock=self.clock)

    @rule()
    def restart(self) -> None:
        self.mgr.close()
        self.mgr = LogManager.open(self.dir, self.config, clock=self.clock)

    @precondition(lambda self: self.next > 0)
    @invariant()
    def consumers_see_what_the_model_says(self) -> None:
        lg = self.log
        assert (lg.log_start_offset, lg.log_end_offset) == (self.start, self.next)
        seen = read_all(lg)
        newest_seen: dict[bytes, int] = {}
        for offset, key, value in seen:
            assert offset >= self.start, f"deleted offset {offset} visible (start {self.start})"
            assert self.records.get(offset) == (key, value), f"offset {offset} reads {key!r}={value!r}"
            newest_seen[key] = offset  # type: ignore[index]
        assert [o for o, _k, _v in seen] == sorted({o for o, _k, _v in seen})
        newest: dict[bytes, int] = {}
        for offset in range(self.start, self.next):
            newest[self.records[offset][0]] = offset
        for key, offset in newest.items():
            if self.records[offset][1] is None:  # tombstone: shown, or gone with everything of its key
                assert newest_seen.get(key) in (offset, None), key
            else:
                assert newest_seen.get(key) == offset, f"latest value of {key!r} at {offset} lost"

    def teardown(self) -> None:
        try:
            self.mgr.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


LogMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestLogMachine = LogMachine.TestCase
