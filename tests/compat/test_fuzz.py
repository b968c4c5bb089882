"""Hostile clients never break, freeze or fool the broker (the generative harness of tests/compat/hostile);
mutated record batches with valid CRCs are refused or stored whole, never half-readable."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from harness.ebb_broker import EbbBroker
from tests.compat.clients import CLIENTS
from tests.compat.hostile.invariants import Limits
from tests.compat.hostile.machine import Budget, Fuzzing, run, run_for
from tests.compat.hostile.requests import Scale
from tests.compat.wire import Wire
from tests.record_batches import raw_batch, record

# `make fuzz-broker FUZZ_BUDGET=<seconds> [FUZZ_SEED=<n>]` runs the long budget; CI runs CI_BUDGET
# derandomized (the same sequences on every run of the same code), and a failure there is printed as it
# happened, unshrunk, so it fails in seconds; `make fuzz-broker FUZZ_SHRINK=1` replays the CI budget and
# shrinks it.
LONG_SECONDS = float(os.environ.get("EBB_FUZZ_BUDGET") or 0)
LONG_SEED = int(os.environ["EBB_FUZZ_SEED"]) if os.environ.get("EBB_FUZZ_SEED") else None
SHRINK_CI = os.environ.get("EBB_FUZZ_SHRINK") == "1"
LONG = bool(LONG_SECONDS) or LONG_SEED is not None
CI_BUDGET = Budget(
    examples=20, steps_per_example=50, restart_odds=64, scale=Scale(max_repeat=1000, max_string=1024)
)
LONG_BUDGET = Budget(
    examples=25,
    steps_per_example=50,
    restart_odds=48,
    scale=Scale(max_repeat=20_000, max_string=32_767, max_bytes=1 << 20),
)


# Shrinking replays sequences for up to 5 minutes (Hypothesis's bound); the long budget sets its own.
@pytest.mark.timeout(LONG_SECONDS + 1800 if LONG else 900 if SHRINK_CI else 300)
def test_hostile_clients_never_break_freeze_or_fool_the_broker(tmp_path: Path) -> None:
    """Sequences of requests drawn from the schemas of every API ebb-broker advertises, biased towards
    duplicates, extremes, huge counts, internal and hostile names and out-of-order sequences, with
    damaged frames and restarts among them; after every step the invariants of
    tests/compat/hostile/invariants.py hold, and at the end a restart reads back every acknowledged
    record. A failure prints its sequence of requests."""
    fuzzing = Fuzzing(tmp_path, Limits())
    try:
        if LONG:
            findings = run_for(fuzzing, LONG_BUDGET, LONG_SECONDS, LONG_SEED)
            assert not findings, f"{len(findings)} failing sequences:\n\n" + "\n\n".join(findings)
        else:
            run(fuzzing, CI_BUDGET, derandomize=True, shrink=SHRINK_CI)
        fuzzing.restart(kill=False)
    finally:
        print(f"hostile clients: {fuzzing.stats.summary()}")
        fuzzing.close()
    fuzzing.remove()


@st.composite
def batches_with_valid_crcs(draw: st.DrawFn) -> bytes:
    """A well-formed batch of 1-20 records whose header and records section are then mutated, with the
    length and CRC-32C recomputed: only the validator stands between these bytes and the log."""
    n = draw(st.integers(1, 20))
    keys = st.sampled_from([None, *[b"key"] * 15])
    section = bytearray(
        b"".join(record(i, key=draw(keys), value=b"v" * draw(st.integers(0, 40))) for i in range(n))
    )
    for _ in range(draw(st.integers(0, 4))):  # 0: the batch as built, which must be stored
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "count"]))
        if kind == "flip" and section:
            section[draw(st.integers(0, len(section) - 1))] = draw(st.integers(0, 255))
        elif kind == "truncate" and len(section) > 1:
            del section[draw(st.integers(1, len(section) - 1)) :]
        elif kind == "insert":
            i = draw(st.integers(0, len(section)))
            section[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "count":
            n = draw(st.sampled_from([0, -1, n + 1, n - 1, 2**31 - 1]))
    return raw_batch(bytes(section), n, base_ts=int(time.time() * 1000))


def test_mutated_batches_with_valid_crcs_never_store_what_a_consumer_cannot_read(broker: EbbBroker) -> None:
    """Hostile batches (lying counts, truncated or garbage records, all with correct CRCs) to a delete and
    a compacted topic: each is refused or stored whole, and afterwards a real consumer reads every stored
    offset, in order, with no gap."""
    c = CLIENTS["confluent-kafka"](broker.bootstrap)
    topics = {"fuzz-batches": {}, "fuzz-batches-compacted": {"cleanup.policy": "compact"}}
    for name, config in topics.items():
        c.create_topic(name, configs=config)
    wire = Wire(broker.bootstrap)
    accepted = dict.fromkeys(topics, 0)
    refused = 0
    P = ProduceRequest[9]
    # The topics take turns, so both see batches whatever Hypothesis draws (a drawn topic was one topic
    # for all 200 examples after another Hypothesis test had run in the same process).
    turns = itertools.cycle(sorted(topics))

    # derandomize: the same 200 batches every run, so "both paths taken" below never depends on luck
    @settings(
        max_examples=200,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    @given(batch=batches_with_valid_crcs())
    def send(batch: bytes) -> None:
        nonlocal refused
        topic = next(turns)
        request = P(
            transactional_id=None,
            acks=1,
            timeout_ms=1000,
            topic_data=[
                P.TopicProduceData(
                    name=topic,
                    partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch)],
                )
            ],
        )
        wire.send_raw(wire.frame(request, 9))
        response = ProduceResponse.decode(wire.recv_frame(), version=9, header=True)
        part = response.responses[0].partition_responses[0]
        if part.error_code == 0:
            assert part.base_offset == accepted[topic]
            accepted[topic] += int.from_bytes(batch[57:61], "big")
        else:
            refused += 1

    try:
        send()
        assert refused > 0 and all(accepted.values()), (refused, accepted)  # both paths were taken
        for topic, stored in accepted.items():
            got = c.consume(topic, stored, timeout=30) if stored else []
            assert [r.offset for r in got] == list(range(stored))
            assert c.latest(topic, 0) == stored
    finally:
        wire.close()
        c.close()
    assert broker.alive()
