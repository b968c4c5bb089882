"""Docs generated from the code are committed as generated: a stale copy fails here (run `make docs`)."""

from __future__ import annotations

from tools import broker_internals


def test_broker_internals_is_what_the_code_says() -> None:
    assert broker_internals.TARGET.read_text() == broker_internals.render(), (
        "docs/broker-internals.md is stale: run `make docs`"
    )


def test_every_engine_error_reaches_clients_as_a_kafka_error() -> None:
    """Errors a request can raise must map to a real Kafka code, not UNKNOWN_SERVER_ERROR."""
    table = broker_internals.render().split("## Engine errors")[1].split("## API keys")[0]
    unknown = [line.split("`")[1] for line in table.splitlines() if "UNKNOWN (-1)" in line]
    assert unknown == ["CorruptIndexError", "CorruptCheckpointError"], "only startup errors may be unmapped"
