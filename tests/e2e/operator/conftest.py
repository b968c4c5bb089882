"""Kafka targets for the operator's e2e tests: every test runs against an ebb-broker and Apache Kafka."""

from __future__ import annotations

from tests.e2e.operator.targets import kafka_bootstrap, kafka_kind, operator_ebb_broker

__all__ = ["kafka_bootstrap", "kafka_kind", "operator_ebb_broker"]
