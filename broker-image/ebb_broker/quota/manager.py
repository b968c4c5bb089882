"""Byte-rate throttling (KIP-13, KIP-55, KIP-219), as Kafka's ClientQuotaManager and its default quota
callback.

Which quota applies to a request is found per quota type (produce: ``producer_byte_rate``, fetch:
``consumer_byte_rate``), most specific first (Kafka's documented precedence)::

    users/<user>/clients/<client-id>   users/<user>/clients/<default>   users/<user>
    users/<default>/clients/<client-id>   users/<default>/clients/<default>   users/<default>
    clients/<client-id>   clients/<default>

The level found also decides who shares the rate: a user quota is shared by every client of that user, a
client-id quota by every connection with that client id (Kafka's metric tags). Each sharing group has a
``Rate`` (rate.py). After the bytes of a request are recorded, a group whose rate exceeds its quota is
throttled for ``(rate - quota) / quota * window`` ms, Kafka's QuotaUtils.throttleTime: the time without
traffic that brings the average back to the quota. The broker answers at once with that
``throttle_time_ms`` and serves nothing more on the connection for that long (KIP-219); the client backs
off too.

Rates are kept only for clients that have a quota (Kafka keeps one for every client once any quota
exists); one idle for an hour is dropped, as Kafka expires its sensors, and at most ``max_sensors`` are
kept per type (the least recently used goes first): a client that invents a new client id per request
cannot grow the broker's memory without bound.

Owned by the event loop; nothing here is thread-safe.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ebb_broker.quota.rate import Rate
from ebb_broker.quota.store import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaStore,
    Entity,
    entity_of,
)

INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000  # Kafka's INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS
MAX_SENSORS = 100_000
INT32_MAX = 2**31 - 1
_DEFAULT = None  # a default entity's name
_SWEEP_EVERY_MS = 60_000


class QuotaType(enum.Enum):
    """Kafka's QuotaType, with the quota key each one enforces."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE

    @property
    def label(self) -> str:
        return self.name.lower()


# Bits of which entity kinds have a quota of a type (Kafka's quotaTypesEnabled).
_CLIENT_ID_QUOTAS, _USER_QUOTAS, _USER_CLIENT_ID_QUOTAS = 1, 2, 4


def _user(name: str | None) -> Entity:
    return entity_of([(USER, name)])


def _client(name: str | None) -> Entity:
    return entity_of([(CLIENT_ID, name)])


def _user_client(user: str | None, client: str | None) -> Entity:
    return entity_of([(USER, user), (CLIENT_ID, client)])


Tags = tuple[str, str]
"""(user, client id) a rate is kept for; "" where the level that applies does not distinguish them."""


@dataclass
class _Sensor:
    rate: Rate
    limit: float | None
    generation: int
    last_ms: int
    throttled: int = 0
    throttle_ms_total: int = 0


@dataclass(frozen=True)
class SensorView:
    """One sharing group's figures for the metrics endpoint."""

    quota_type: QuotaType
    user: str
    client_id: str
    rate: float
    limit: float | None  # None: the quota was lifted
    throttled: int
    throttle_ms_total: int


class ClientQuotaManager:
    """Records one quota type's bytes per (user, client id) and answers the throttle time."""

    def __init__(
        self,
        quota_type: QuotaType,
        store: ClientQuotaStore,
        *,
        samples: int = 11,
        window_seconds: int = 1,
        clock: Callable[[], int] | None = None,
        max_sensors: int = MAX_SENSORS,
    ) -> None:
        self.quota_type = quota_type
        self.store = store
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._clock = clock or (lambda: time.monotonic_ns() // 1_000_000)
        self._max_sensors = max_sensors
        self._sensors: OrderedDict[Tags, _Sensor] = OrderedDict()
        self._generation = -1
        self._quotas: dict[Entity, float] = {}
        self._enabled = 0
        self._last_sweep = 0

    # -- which quota applies (Kafka's DefaultQuotaCallback) -------------------------------------------

    def _refresh(self) -> None:
        if self._generation == self.store.generation:
            return
        self._quotas = self.store.quotas_of(self.quota_type.value)
        enabled = 0
        for entity in self._quotas:
            types = {t for t, _ in entity}
            enabled |= (
                _USER_CLIENT_ID_QUOTAS
                if types == {USER, CLIENT_ID}
                else _USER_QUOTAS
                if types == {USER}
                else _CLIENT_ID_QUOTAS
            )
        self._enabled = enabled
        self._generation = self.store.generation

    @property
    def enabled(self) -> bool:
        """Whether any entity has a quota of this type (nothing is recorded otherwise)."""
        self._refresh()
        return bool(self._enabled)

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """Who shares the rate of a request by ``user`` with ``client_id`` (Kafka's quotaMetricTags)."""
        self._refresh()
        q = self._quotas
        if self._enabled in (0, _CLIENT_ID_QUOTAS):
            return "", client_id
        if self._enabled == _USER_QUOTAS:
            return user, ""
        if self._enabled == _USER_CLIENT_ID_QUOTAS:
            return user, client_id
        for entity, tags in (
            (_user_client(user, client_id), (user, client_id)),
            (_user_client(user, _DEFAULT), (user, client_id)),
            (_user(user), (user, "")),
            (_user_client(_DEFAULT, client_id), (user, client_id)),
            (_user_client(_DEFAULT, _DEFAULT), (user, client_id)),
            (_user(_DEFAULT), (user, "")),
        ):
            if entity in q:
                return tags
        return "", client_id

    def quota_limit(self, tags: Tags) -> float | None:
        """The quota of a sharing group, most specific level first (Kafka's findQuota); None: none."""
        self._refresh()
        user, client_id = tags
        if user and client_id:
            chain = [
                _user_client(user, client_id),
                _user_client(user, _DEFAULT),
                _user_client(_DEFAULT, client_id),
                _user_client(_DEFAULT, _DEFAULT),
            ]
        elif user:
            chain = [_user(user), _user(_DEFAULT)]
        elif client_id:
            chain = [_client(client_id), _client(_DEFAULT)]
        else:
            chain = []
        return next((self._quotas[e] for e in chain if e in self._quotas), None)

    # -- recording ------------------------------------------------------------------------------------

    def _sensor(self, user: str, client_id: str, now_ms: int) -> _Sensor | None:
        """The rate of the request's sharing group (created when it has a quota), marked as used now."""
        tags = self.metric_tags(user, client_id)
        sensor = self._sensors.get(tags)
        if sensor is None:
            limit = self.quota_limit(tags)
            if limit is None:
                return None
            self._make_room(now_ms)
            sensor = _Sensor(Rate(self.samples, self.window_ms), limit, self._generation, now_ms)
            self._sensors[tags] = sensor
        self._update_limit(tags, sensor)
        self._sensors.move_to_end(tags)
        sensor.last_ms = now_ms
        return sensor

    def _update_limit(self, tags: Tags, sensor: _Sensor) -> None:
        """A quota changed since the sensor last looked: take the one in force now (None: lifted)."""
        if sensor.generation != self._generation:
            sensor.limit, sensor.generation = self.quota_limit(tags), self._generation

    def record(self, user: str, client_id: str, value: float) -> int:
        """Record ``value`` bytes for the request's (user, client id); the throttle time in ms (0 when
        within its quota or without one). Kafka's recordAndGetThrottleTimeMs: recorded first, then
        checked, so the request that crosses the quota is the one throttled."""
        if not self.enabled:
            return 0
        now = self._clock()
        sensor = self._sensor(user, client_id, now)
        if sensor is None:
            return 0
        sensor.rate.record(value, now)
        if sensor.limit is None:
            return 0
        measured = sensor.rate.measure(now)
        if measured <= sensor.limit:
            return 0
        # Kafka's QuotaUtils.throttleTime (Math.round of a positive double).
        throttle = int((measured - sensor.limit) / sensor.limit * sensor.rate.window_size_ms(now) + 0.5)
        throttle = min(throttle, INT32_MAX)
        if throttle > 0:
            sensor.throttled += 1
            sensor.throttle_ms_total += throttle
        return throttle

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back bytes that were recorded but not sent (a throttled fetch answers no records)."""
        if not self.enabled:
            return
        now = self._clock()
        sensor = self._sensor(user, client_id, now)
        if sensor is not None:
            sensor.rate.record(-value, now)

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most one request may carry without being throttled for certain (Kafka's
        maxValueInQuotaWindow: the quota times the full windows of the rate); a fetch is capped by it."""
        if not self.enabled:
            return float("inf")
        limit = self.quota_limit(self.metric_tags(user, client_id))
        if limit is None:
            return float("inf")
        return limit * (self.samples - 1) * self.window_ms / 1000

    def _make_room(self, now_ms: int) -> None:
        """Before a new rate: drop the idle ones, then the least recently used beyond ``max_sensors``."""
        self._expire_idle(now_ms)
        while len(self._sensors) >= self._max_sensors:
            self._sensors.popitem(last=False)

    def _expire_idle(self, now_ms: int) -> None:
        """Drop rates idle for an hour (looked for at most once a minute)."""
        if now_ms - self._last_sweep >= _SWEEP_EVERY_MS:
            self._last_sweep = now_ms
            cutoff = now_ms - INACTIVE_SENSOR_EXPIRATION_MS
            for tags in [t for t, s in self._sensors.items() if s.last_ms <= cutoff]:
                del self._sensors[tags]

    def sensors(self) -> Iterator[SensorView]:
        """Every sharing group with a rate, for the metrics endpoint: one whose quota was lifted stays
        (with no limit) until it has been idle for an hour, so its throttle counters do not vanish."""
        now = self._clock()
        self._refresh()
        self._expire_idle(now)
        for (user, client_id), s in list(self._sensors.items()):
            self._update_limit((user, client_id), s)
            yield SensorView(
                self.quota_type,
                user,
                client_id,
                s.rate.measure(now),
                s.limit,
                s.throttled,
                s.throttle_ms_total,
            )


class ClientQuotas:
    """The broker's client quotas: the stored configs and one manager per enforced quota type."""

    def __init__(self, store: ClientQuotaStore, *, samples: int = 11, window_seconds: int = 1) -> None:
        self.store = store
        # One AlterClientQuotas at a time: each plans against the quotas the previous one left.
        self.alter_lock = asyncio.Lock()
        self.produce, self.fetch = (
            ClientQuotaManager(t, store, samples=samples, window_seconds=window_seconds)
            for t in (QuotaType.PRODUCE, QuotaType.FETCH)
        )

    def sensors(self) -> Iterator[SensorView]:
        yield from self.produce.sensors()
        yield from self.fetch.sensors()


def user_of(principal: str) -> str:
    """The name a user quota matches: the principal's name without its type (Kafka's principal.getName)."""
    return principal.partition(":")[2] if ":" in principal else principal
