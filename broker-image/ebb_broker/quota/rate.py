"""Kafka's windowed rate (``org.apache.kafka.common.metrics.stats.Rate`` over a ``SampledStat``), as Kafka
4.3 measures the byte rates its client quotas bound.

Values are summed into samples of ``window_ms`` each; ``samples + 1`` of them are kept in a ring. A sample
is complete once ``window_ms`` passed since it started; the next value starts the next sample. A sample
with no value for ``samples * window_ms`` is obsolete and reset. The rate is the sum of every sample
divided by the time since the oldest sample started, but never by less than ``samples - 1`` windows:
Kafka assumes empty prior windows, so a client's first burst is averaged over ~10 s (the default 11
samples of 1 s) rather than refused at once.

Not thread-safe: the event loop owns every rate.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0


class Rate:
    """Events per second of a quantity (bytes), as Kafka's ``Rate`` with ``samples`` x ``window_ms``."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(f"a rate needs a sample of at least 1 ms, got {samples} x {window_ms} ms")
        self.samples = samples
        self.window_ms = window_ms
        self._ring: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (negative to take back what was recorded, as Kafka's unrecord)."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge(now_ms)
        total = sum(s.value for s in self._ring)
        return total / (self.window_size_ms(now_ms) / 1000)

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate is averaged over (Kafka's ``Rate.windowSize``), at least 1 ms."""
        self._purge(now_ms)
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        elapsed = now_ms - min(s.start_ms for s in self._ring)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        return self._ring[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One sample more than configured is kept (Kafka: purging may reset the oldest meanwhile).
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._ring):
            sample = _Sample(now_ms, now_ms)
            self._ring.append(sample)
            return sample
        sample = self._ring[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._ring:
            if now_ms - sample.last_event_ms >= expire:
                sample.reset(now_ms)
