"""The stored client quotas: Kafka's validation and filters, persistence across restarts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ebb_broker.quota.store import (
    CLIENT_ID,
    FILE_NAME,
    IP,
    PRODUCER_BYTE_RATE,
    USER,
    Alteration,
    ClientQuotaStore,
    CorruptQuotaFileError,
    QuotaFilterError,
    QuotaOp,
    entity_of,
)

SET = QuotaOp(PRODUCER_BYTE_RATE, 1024.0)


def _alter(
    store: ClientQuotaStore, pairs: Sequence[tuple[str, str | None]], *ops: QuotaOp
) -> tuple[int, str | None]:
    (r,) = store.alter([Alteration(entity_of(pairs), list(ops))])
    return r.error_code, r.error_message


# Kafka 4.3.1's answers to the same alterations (AlterClientQuotas on a broker, recorded side by side).
KAFKA_REFUSALS = [
    ([(USER, "bob")], QuotaOp("foo", 1.0), "Invalid configuration key foo"),
    ([(USER, "bob")], QuotaOp(PRODUCER_BYTE_RATE, 1.5), "producer_byte_rate cannot be a fractional value."),
    ([(USER, "bob")], QuotaOp(PRODUCER_BYTE_RATE, 0.0), "Quota producer_byte_rate must be greater than 0"),
    ([(USER, "bob")], QuotaOp(PRODUCER_BYTE_RATE, -5.0), "Quota producer_byte_rate must be greater than 0"),
    (
        [(USER, "b")],
        QuotaOp(PRODUCER_BYTE_RATE, 1e19),
        "Proposed value for producer_byte_rate is too large for a LONG.",
    ),
    ([(USER, "s")], QuotaOp("SCRAM-SHA-256", 1.0), "Invalid configuration key SCRAM-SHA-256"),
    ([], SET, "Invalid empty client quota entity"),
    ([("group", "g")], SET, "Unhandled client quota entity type: group"),
    ([(USER, "")], SET, "Empty user not supported"),
    ([(IP, "1.2.3.4"), (USER, "x")], SET, "IP entity should not be combined with User or ClientId"),
]


@pytest.mark.parametrize(("pairs", "op", "message"), KAFKA_REFUSALS)
def test_refused_as_kafka_refuses(
    tmp_path: Path, pairs: list[tuple[str, str]], op: QuotaOp, message: str
) -> None:
    store = ClientQuotaStore.open(tmp_path)
    code, text = _alter(store, pairs, op)
    assert code == 42 and text is not None and message in text
    assert store.quotas == {} and not (tmp_path / FILE_NAME).exists()


@pytest.mark.parametrize(
    ("pairs", "op", "message"),
    [
        (
            [(USER, "a")],
            QuotaOp("request_percentage", 50.0),
            "ebb-broker does not enforce request_percentage",
        ),
        (
            [(CLIENT_ID, "c")],
            QuotaOp("controller_mutation_rate", 2.0),
            "does not enforce controller_mutation_rate",
        ),
        ([(IP, "127.0.0.1")], QuotaOp("connection_creation_rate", 3.0), "does not enforce IP quotas"),
        ([(USER, "a")], QuotaOp(PRODUCER_BYTE_RATE, float("nan")), "must be a finite number"),
    ],
)
def test_what_ebb_broker_does_not_enforce_is_refused_by_name(
    tmp_path: Path, pairs: list[tuple[str, str]], op: QuotaOp, message: str
) -> None:
    code, text = _alter(ClientQuotaStore.open(tmp_path), pairs, op)
    assert code == 42 and text is not None and message in text


def test_an_entity_with_one_bad_op_changes_nothing_others_apply(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    results = store.alter(
        [
            Alteration(entity_of([(USER, "half")]), [SET, QuotaOp("foo", 1.0)]),
            Alteration(entity_of([(USER, "ok")]), [SET]),
            Alteration(entity_of([(USER, "dup")]), [SET, QuotaOp(PRODUCER_BYTE_RATE, 5.0)]),
        ]
    )
    assert [(r.entity, r.error_code) for r in results] == [
        (((USER, "half"),), 42),
        (((USER, "ok"),), 0),
        (((USER, "dup"),), 42),
    ]
    assert results[2].error_message == "Ignoring duplicate entity ClientQuotaEntity(entries={user=dup})"
    assert store.quotas == {((USER, "ok"),): {PRODUCER_BYTE_RATE: 1024.0}}


def test_an_entity_named_twice_is_refused_whole(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    entity = entity_of([(USER, "de")])
    results = store.alter(
        [Alteration(entity, [SET]), Alteration(entity, [QuotaOp("consumer_byte_rate", 4.0)])]
    )
    assert [(r.entity, r.error_code) for r in results] == [(entity, 42)]  # one answer for the entity
    assert store.quotas == {}  # Kafka applies the first one while answering the error; Ebb applies neither


def test_validate_only_and_removal(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    assert (
        store.alter([Alteration(entity_of([(CLIENT_ID, None)]), [SET])], validate_only=True)[0].error_code
        == 0
    )
    assert store.quotas == {}
    assert _alter(store, [(CLIENT_ID, None)], SET, QuotaOp("consumer_byte_rate", 2048.0)) == (0, None)
    assert _alter(store, [(CLIENT_ID, None)], QuotaOp(PRODUCER_BYTE_RATE, 0.0, remove=True)) == (0, None)
    assert store.quotas == {((CLIENT_ID, None),): {"consumer_byte_rate": 2048.0}}
    assert _alter(store, [(CLIENT_ID, None)], QuotaOp("consumer_byte_rate", 0.0, remove=True)) == (0, None)
    assert store.quotas == {}  # an entity without quotas is gone
    assert _alter(store, [(USER, "nobody")], QuotaOp(PRODUCER_BYTE_RATE, 0.0, remove=True)) == (0, None)


def test_quotas_survive_a_restart_and_a_bad_file_stops_the_start(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    _alter(store, [(USER, "alice"), (CLIENT_ID, None)], SET)
    _alter(store, [(CLIENT_ID, "c1")], QuotaOp("consumer_byte_rate", 2048.0))
    assert ClientQuotaStore.open(tmp_path).quotas == store.quotas
    (tmp_path / FILE_NAME).write_text(
        '{"version": 1, "entities": [{"entity": {"user": "x"}, "quotas": {"foo": 1}}]}'
    )
    with pytest.raises(CorruptQuotaFileError, match="Invalid configuration key foo"):
        ClientQuotaStore.open(tmp_path)
    (tmp_path / FILE_NAME).write_text("{")
    with pytest.raises(CorruptQuotaFileError, match=FILE_NAME):
        ClientQuotaStore.open(tmp_path)


@pytest.fixture
def filled(tmp_path: Path) -> ClientQuotaStore:
    store = ClientQuotaStore.open(tmp_path)
    for pairs in ([(CLIENT_ID, "c1")], [(USER, "alice"), (CLIENT_ID, None)], [(USER, "bob")], [(USER, None)]):
        _alter(store, pairs, SET)
    return store


@pytest.mark.parametrize(
    ("components", "strict", "names"),
    [
        ([], False, ["c1", "alice/<default>", "bob", "<default>"]),
        ([(USER, 2, None)], False, ["alice/<default>", "bob", "<default>"]),
        ([(USER, 2, None)], True, ["bob", "<default>"]),
        ([(CLIENT_ID, 1, None)], False, ["alice/<default>"]),
        ([(CLIENT_ID, 0, "c1")], True, ["c1"]),
        ([(USER, 0, "alice"), (CLIENT_ID, 2, None)], True, ["alice/<default>"]),
        ([(IP, 2, None)], False, []),
    ],
)
def test_describe_filters_match_as_kafkas(
    filled: ClientQuotaStore, components: list[tuple[str, int, str | None]], strict: bool, names: list[str]
) -> None:
    found = filled.describe(components, strict=strict)
    shown = ["/".join("<default>" if n is None else n for _t, n in reversed(entity)) for entity, _q in found]
    assert sorted(shown) == sorted(names)


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("group", 2, None)], 35, "Unsupported entity type group"),
        ([("", 2, None)], 42, "Invalid empty entity type."),
        ([(USER, 2, None), (USER, 0, "x")], 42, "Entity type user cannot appear more than once"),
        ([(USER, 0, None)], 42, "MATCH_TYPE_EXACT, but set match string to null"),
        ([(USER, 1, "x")], 42, "MATCH_TYPE_DEFAULT, but also specified a match string"),
        ([(USER, 7, None)], 42, "Unknown match type 7"),
        ([(IP, 2, None), (USER, 2, None)], 42, "IP filter component should not be used with user"),
    ],
)
def test_bad_filters_fail_as_kafkas(
    filled: ClientQuotaStore, components: list[tuple[str, int, str | None]], code: int, message: str
) -> None:
    with pytest.raises(QuotaFilterError, match=message) as info:
        filled.describe(components, strict=False)
    assert info.value.code == code
