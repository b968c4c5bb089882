"""The kafka-python internals the adapter relies on are still there, shaped as it uses them.

`ebb_operator.kafka.client_internals` is the one module that touches them. Each private attribute it
uses is pinned here, and the module is read to check that it uses no other: a kafka-python upgrade that
drops or reshapes one fails this test by name instead of a cluster test with a confusing error. The
request/header protocol of kafka-python's connection is exercised whole, in memory, through the
connection's own protocol parser.
"""

from __future__ import annotations

import ast
import inspect
import struct
from pathlib import Path

from kafka.admin import KafkaAdminClient
from kafka.net.manager import KafkaConnectionManager
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.parser import KafkaProtocol

from ebb_operator.kafka import client_internals
from ebb_operator.kafka.client_internals import DecodedRequest

# What the module reaches into, and the shape it relies on.
PINNED = {"_manager", "_find_coordinator_ids"}


def _private_attributes_used() -> set[str]:
    tree = ast.parse(Path(inspect.getfile(client_internals)).read_text())
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    }


def test_the_module_uses_only_the_pinned_private_attributes() -> None:
    assert _private_attributes_used() == PINNED


def test_the_admin_clients_connection_manager_sends_and_runs() -> None:
    declared = {
        c.__name__: vars(c).get("__annotations__", {}).get("_manager") for c in KafkaAdminClient.__mro__
    }
    assert "KafkaConnectionManager" in {str(a).strip("'") for a in declared.values() if a}, declared
    send = inspect.signature(KafkaConnectionManager.send)
    assert list(send.parameters)[:3] == ["self", "request", "node_id"]
    run = inspect.signature(KafkaConnectionManager.run)
    assert [(p.name, p.kind) for p in run.parameters.values()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("coro", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("args", inspect.Parameter.VAR_POSITIONAL),
    ]


def test_the_admin_client_finds_many_group_coordinators_at_once() -> None:
    find = KafkaAdminClient._find_coordinator_ids
    assert inspect.iscoroutinefunction(find)
    assert list(inspect.signature(find).parameters)[:2] == ["self", "keys"]


def test_a_request_with_its_own_decoder_goes_through_kafka_pythons_protocol() -> None:
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    ours = DecodedRequest(
        OffsetFetchRequest(groups=[group(group_id="g1", topics=None)], version=8),
        8,
        OffsetFetchResponse,
        lambda data: ("decoded here", data),
    )
    connection = KafkaProtocol(client_id="ebb")
    correlation_id = connection.send_request(ours)
    sent = connection.send_bytes()
    theirs = KafkaProtocol(client_id="ebb")
    theirs.send_request(OffsetFetchRequest(groups=[group(group_id="g1", topics=None)], version=8))
    assert sent == theirs.send_bytes()  # the same bytes kafka-python sends for its own request

    answer = OffsetFetchResponse(
        throttle_time_ms=7,
        groups=[OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g1", topics=[], error_code=0)],
    )
    body = bytes(answer.encode(version=8))
    # The frame a broker sends: size, then response header v1 (correlation id, no tagged fields).
    frame = struct.pack(">ii", 4 + 1 + len(body), correlation_id) + b"\x00" + body
    assert connection.receive_bytes(frame) == [(correlation_id, ("decoded here", body))]


def test_a_message_kafka_python_does_not_ship_is_generated_from_its_definition() -> None:
    made = client_internals.message_class("DescribeShareGroupOffsetsRequest", "ebb_operator.kafka.messages")
    assert (made.API_KEY, made.name, made.max_version) == (90, "DescribeShareGroupOffsetsRequest", 0)
    group = made.DescribeShareGroupOffsetsRequestGroup(group_id="g", topics=None)
    assert bytes(made(groups=[group], version=0).encode(version=0)) == b"\x02\x02g\x00\x00\x00"
