"""The kafka adapter sets, reads and removes client quotas (KIP-546) on ebb-broker and Apache Kafka alike:
what the operator's ThrottleProducers action will call."""

from __future__ import annotations

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, QuotaEntity
from harness.bounded import until
from tests.e2e.operator.operator_kafka import unique


def test_adapter_sets_reads_and_removes_client_quotas(kafka_bootstrap: str) -> None:
    producer = QuotaEntity.of(client_id=unique("producer"))
    users_clients = QuotaEntity.of(user=unique("user"), client_id=None)
    with ClusterAdmin(ClusterConnection.of(kafka_bootstrap)) as admin:
        try:
            results = admin.alter_client_quotas(
                {producer: {"producer_byte_rate": 65536}, users_clients: {"consumer_byte_rate": 1.5}}
            )
            assert results[producer] is None
            refused = results[users_clients]  # a byte rate is a whole number, on both brokers
            assert (
                refused is not None and refused.code == "INVALID_REQUEST" and "fractional" in refused.message
            )

            # Kafka answers once its controller committed the change; its brokers see it a moment later.
            def described() -> dict[QuotaEntity, dict[str, float]] | None:
                quotas = admin.client_quotas()
                return quotas if producer in quotas else None

            quotas = until("the quota described", described)
            assert quotas[producer] == {"producer_byte_rate": 65536.0}
            assert users_clients not in quotas
            # validate_only changes nothing; removing a key that is not set is no error.
            checked = admin.alter_client_quotas(
                {users_clients: {"consumer_byte_rate": 2048}}, validate_only=True
            )
            assert checked == {users_clients: None} and users_clients not in admin.client_quotas()
        finally:
            removed = admin.alter_client_quotas({producer: {"producer_byte_rate": None}})
        assert removed == {producer: None}
        until("the quota removed", lambda: producer not in admin.client_quotas())
