"""Kafka's windowed Rate, figure by figure: every expected value below is what Kafka 4.3.1's own
org.apache.kafka.common.metrics.stats.Rate answers for the same records (run once with kafka-clients)."""

from __future__ import annotations

import pytest

from ebb_broker.quota.rate import Rate

T0 = 1_000_000


def test_first_burst_is_averaged_over_the_prior_windows_kafka_assumes() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(5000, T0)
    # One sample of 0 ms elapsed: Kafka adds the 10 missing full windows, so 5000 B over 10 s.
    assert rate.window_size_ms(T0) == 10_000
    assert rate.measure(T0) == pytest.approx(500.0)
    # 2.5 s later: still fewer full windows than 10, so the window is 2.5 s + 8 windows.
    assert rate.window_size_ms(T0 + 2500) == 10_500
    assert rate.measure(T0 + 2500) == pytest.approx(476.1904761904762)


def test_steady_traffic_is_measured_over_the_samples_elapsed() -> None:
    rate = Rate(samples=3, window_ms=1000)
    for second in range(10):
        rate.record(1000, T0 + second * 1000)
    now = T0 + 9_500
    # samples + 1 are kept; the one last written at T0 + 6 s is obsolete by now (3 windows old), so the
    # rate is the three samples from T0 + 7 s over the 2.5 s since then.
    assert rate.window_size_ms(now) == 2_500
    assert rate.measure(now) == pytest.approx(1200.0)


def test_a_quiet_period_makes_old_samples_obsolete() -> None:
    rate = Rate(samples=2, window_ms=1000)
    rate.record(10_000, T0)
    # samples * window = 2 s without an event: the sample is reset, the rate is back to 0.
    assert rate.measure(T0 + 2000) == 0.0
    rate.record(100, T0 + 2100)
    assert rate.measure(T0 + 2100) == pytest.approx(100 / 1.1)  # 100 ms plus one assumed prior window


def test_a_negative_value_takes_back_what_was_recorded() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(4000, T0)
    rate.record(3000, T0 + 10)
    rate.record(-3000, T0 + 20)
    assert rate.measure(T0 + 20) == pytest.approx(4000 / 10.02)


def test_invalid_windows_are_refused() -> None:
    with pytest.raises(ValueError, match="a rate needs a sample of at least 1 ms"):
        Rate(samples=0, window_ms=1000)
