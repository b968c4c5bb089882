"""Which quota applies to a client, who shares its rate, and the throttle time (Kafka's ClientQuotaManager
with its default callback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.quota.manager import ClientQuotaManager, QuotaType, user_of
from ebb_broker.quota.store import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    Alteration,
    ClientQuotaStore,
    QuotaOp,
    entity_of,
)

T0 = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def _set(
    store: ClientQuotaStore, value: float | None, key: str = PRODUCER_BYTE_RATE, **names: str | None
) -> None:
    pairs = [(USER if k == "user" else CLIENT_ID, v) for k, v in names.items()]
    op = QuotaOp(key, value or 0.0, remove=value is None)
    (result,) = store.alter([Alteration(entity_of(pairs), [op])])
    assert result.error_code == 0, result


@pytest.fixture
def store(tmp_path: Path) -> ClientQuotaStore:
    return ClientQuotaStore.open(tmp_path)


def _manager(store: ClientQuotaStore, clock: Clock | None = None, **kw: int) -> ClientQuotaManager:
    return ClientQuotaManager(QuotaType.PRODUCE, store, clock=clock or Clock(), **kw)


# The eight levels, most specific first (Kafka's documented order), each with the quota it sets and the
# (user, client id) that then share a rate.
LEVELS: list[tuple[dict[str, str | None], float, tuple[str, str]]] = [
    ({"user": "alice", "client": "app"}, 1.0, ("alice", "app")),
    ({"user": "alice", "client": None}, 2.0, ("alice", "app")),
    ({"user": "alice"}, 3.0, ("alice", "")),
    ({"user": None, "client": "app"}, 4.0, ("alice", "app")),
    ({"user": None, "client": None}, 5.0, ("alice", "app")),
    ({"user": None}, 6.0, ("alice", "")),
    ({"client": "app"}, 7.0, ("", "app")),
    ({"client": None}, 8.0, ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_quota_applies(store: ClientQuotaStore, level: int) -> None:
    # Set this level and every less specific one: this level's quota and sharing must win.
    for names, value, _tags in LEVELS[level:]:
        _set(store, value, PRODUCER_BYTE_RATE, **names)
    m = _manager(store)
    _names, want, tags = LEVELS[level]
    assert m.metric_tags("alice", "app") == tags
    assert m.quota_limit(tags) == want


def test_no_quota_no_throttle(store: ClientQuotaStore) -> None:
    m = _manager(store)
    assert not m.enabled
    assert m.record("alice", "app", 10**9) == 0
    _set(store, 1000, key=CONSUMER_BYTE_RATE, client="app")  # another type's quota changes nothing here
    assert not m.enabled and m.record("alice", "app", 10**9) == 0
    assert m.max_value_in_window("alice", "app") == float("inf")


def test_throttle_times_are_kafkas(store: ClientQuotaStore) -> None:
    """20 requests of 2000 B every 100 ms against 1000 B/s: the throttle times Kafka 4.3.1's Rate and
    QuotaUtils.throttleTime give for the same records."""
    _set(store, 1000, client="app")
    clock = Clock()
    m = _manager(store, clock)
    got = []
    for i in range(20):
        clock.now = T0 + i * 100
        got.append(m.record("anyone", "app", 2000))
    assert got == [0, 0, 0, 0, 0, 1500, 3400, 5300, 7200, 9100, 12000, 13900, 15800, 17700, 19600, 21500,
                   23400, 25300, 27200, 29100]  # fmt: skip
    (view,) = m.sensors()
    assert (view.user, view.client_id, view.limit, view.throttled) == ("", "app", 1000, 15)
    assert view.throttle_ms_total == sum(got)


def test_a_user_quota_is_shared_by_every_client_of_the_user(store: ClientQuotaStore) -> None:
    _set(store, 1000, user="alice")
    m = _manager(store)
    assert m.record("alice", "one", 6000) == 0  # 6000 B over the 10 s Kafka assumes at first
    assert m.record("alice", "two", 6000) > 0  # the same rate: 12000 B > 10 s x 1000 B/s
    assert m.record("bob", "one", 6000) == 0  # bob has no quota


def test_removing_the_quota_lifts_the_throttle(store: ClientQuotaStore) -> None:
    _set(store, 1000, client="app")
    m = _manager(store)
    assert m.record("u", "app", 20_000) > 0
    _set(store, None, client="app")
    assert m.record("u", "app", 20_000) == 0
    (view,) = m.sensors()  # the counters stay (until idle for an hour), the limit is gone
    assert (view.limit, view.throttled) == (None, 1)


def test_unrecord_and_the_fetch_cap(store: ClientQuotaStore) -> None:
    _set(store, 1000, client="app")
    m = _manager(store)
    # Kafka's maxValueInQuotaWindow: quota x (samples - 1) windows.
    assert m.max_value_in_window("u", "app") == 10_000
    assert m.record("u", "app", 15_000) > 0
    m.unrecord("u", "app", 15_000)
    assert m.record("u", "app", 5_000) == 0


def test_rates_are_bounded_and_expire(store: ClientQuotaStore) -> None:
    _set(store, 1000, client=None)  # a default: every client id gets a rate of its own
    clock = Clock()
    m = _manager(store, clock, max_sensors=3)
    for i in range(10):
        m.record("u", f"c{i}", 10)
    assert [v.client_id for v in m.sensors()] == ["c7", "c8", "c9"]  # least recently used went first
    clock.now += 3_600_000  # idle for an hour: dropped at the next new client (Kafka expires sensors)
    m.record("u", "fresh", 10)
    assert [v.client_id for v in m.sensors()] == ["fresh"]


def test_principals_match_user_quotas_by_name() -> None:
    assert user_of("User:alice") == "alice"
    assert user_of("User:CN=alice,OU=eng") == "CN=alice,OU=eng"
    assert user_of("ANONYMOUS") == "ANONYMOUS"
