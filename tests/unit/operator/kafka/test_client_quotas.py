"""The kafka adapter's client quota calls (KIP-546): what it puts on the wire and how it reads answers,
through kafka-python's own encoder and decoder."""

from __future__ import annotations

import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasResponse,
)

from ebb_operator.kafka import KafkaCallError, QuotaEntity
from ebb_operator.kafka.admin import alter_quotas_request, altered_quotas, described_quotas

APP = QuotaEntity.of(client_id="app")
ALICE_DEFAULT_CLIENT = QuotaEntity.of(user="alice", client_id=None)


def test_entities_are_canonical_whatever_the_order() -> None:
    assert ALICE_DEFAULT_CLIENT.parts == (("client-id", None), ("user", "alice"))
    assert QuotaEntity.of(user=None) == QuotaEntity((("user", None),))
    assert str(ALICE_DEFAULT_CLIENT) == "client-id=<default>, user=alice"


def test_alter_request_sets_and_removes_per_entity() -> None:
    request = alter_quotas_request(
        {
            APP: {"producer_byte_rate": 1024, "consumer_byte_rate": None},
            ALICE_DEFAULT_CLIENT: {"producer_byte_rate": 1},
        },
        validate_only=True,
    )
    wire = bytes(request.encode(version=1))
    back = AlterClientQuotasRequest.decode(wire, version=1)
    assert back.validate_only is True
    got = [
        (
            sorted((e.entity_type, e.entity_name) for e in entry.entity),
            [(o.key, o.value, o.remove) for o in entry.ops],
        )
        for entry in back.entries
    ]
    assert got == [
        ([("client-id", "app")], [("producer_byte_rate", 1024.0, False), ("consumer_byte_rate", 0.0, True)]),
        ([("client-id", None), ("user", "alice")], [("producer_byte_rate", 1.0, False)]),
    ]


def test_alter_answers_each_entity_with_its_own_error() -> None:
    R = AlterClientQuotasResponse[1]
    E = R.EntryData
    response = R(
        throttle_time_ms=0,
        entries=[
            E(
                error_code=0,
                error_message=None,
                entity=[E.EntityData(entity_type="client-id", entity_name="app")],
            ),
            E(
                error_code=42,
                error_message="producer_byte_rate cannot be a fractional value.",
                entity=[
                    E.EntityData(entity_type="user", entity_name="alice"),
                    E.EntityData(entity_type="client-id", entity_name=None),
                ],
            ),
        ],
    )
    decoded = AlterClientQuotasResponse.decode(bytes(response.encode(version=1)), version=1)
    missing = QuotaEntity.of(user="nobody")
    out = altered_quotas(decoded, [APP, ALICE_DEFAULT_CLIENT, missing])
    assert out[APP] is None
    failure = out[ALICE_DEFAULT_CLIENT]
    assert failure is not None and failure.code == "INVALID_REQUEST" and "fractional" in failure.message
    unanswered = out[missing]
    assert unanswered is not None and unanswered.code == "UNKNOWN_SERVER_ERROR"


def test_describe_reads_entities_and_refusals() -> None:
    R = DescribeClientQuotasResponse[1]
    E = R.EntryData
    ok = R(
        throttle_time_ms=0,
        error_code=0,
        error_message="",
        entries=[
            E(
                entity=[
                    E.EntityData(entity_type="user", entity_name="alice"),
                    E.EntityData(entity_type="client-id", entity_name=None),
                ],
                values=[E.ValueData(key="producer_byte_rate", value=4096.0)],
            )
        ],
    )
    decoded = DescribeClientQuotasResponse.decode(bytes(ok.encode(version=1)), version=1)
    assert described_quotas(decoded) == {ALICE_DEFAULT_CLIENT: {"producer_byte_rate": 4096.0}}
    refused = R(throttle_time_ms=0, error_code=31, error_message="not allowed", entries=None)
    with pytest.raises(KafkaCallError, match="CLUSTER_AUTHORIZATION_FAILED: not allowed"):
        described_quotas(refused)
