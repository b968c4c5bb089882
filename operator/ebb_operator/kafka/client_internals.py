"""The kafka-python internals the adapter relies on, all here, each pinned by a unit test
(tests/unit/operator/kafka/test_client_internals.py): an upgrade that renames or reshapes one fails there,
by name, before any cluster is asked.

kafka-python 3.0.12 has public calls for everything else the operator does. What it has not:
- a request of the caller's sent to a chosen broker over the client's own connections (so TLS, SASL and
  its connection pool apply) and awaited on its I/O loop, several in flight at once: DeleteRecords to
  every leader at once, OffsetFetch v8 pipelined to each group coordinator, the client quota requests
  its admin lacks, DescribeShareGroupOffsets (`send`, `run`);
- the coordinators of many groups in one FindCoordinator v4 request (KIP-699), cached by the client
  (`group_coordinators`);
- an answer decoded by a codec of the caller's instead of kafka-python's classes (`DecodedRequest`: the
  OffsetFetch v8 answer of 10 M commits, `offset_fetch.py`), which takes the request and header protocol
  of kafka-python's connection (`with_header`, `encode`, `expect_response`, `header`,
  `get_response_class`, `parse_header`, `decode`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from kafka.admin import KafkaAdminClient

T = TypeVar("T")


def run(client: KafkaAdminClient, coroutine: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`coroutine(*args)` on the client's I/O thread; blocks until it ends (safe from several threads)."""
    result: T = client._manager.run(coroutine, *args)
    return result


def send(client: KafkaAdminClient, request: Any, node_id: int | None = None) -> Awaitable[Any]:
    """Send `request` to broker `node_id`, or to the least loaded one (connecting first when needed);
    await the answer on the loop."""
    future: Awaitable[Any] = client._manager.send(request, node_id=node_id)
    return future


async def group_coordinators(client: KafkaAdminClient, groups: Iterable[str]) -> dict[str, int]:
    """The coordinator's broker id of each group: FindCoordinator v4 for all unknown ones at once (one
    request per group on brokers before Kafka 3.0), cached in the client's metadata."""
    found: dict[str, int] = await client._find_coordinator_ids(list(groups))
    return found


class _AnswerType(Generic[T]):
    """What the connection asks of a request's header for the answer: its header parser and decoder."""

    def __init__(self, response: Any, decode: Callable[[bytes], T]) -> None:
        self._response = response
        self._decode = decode

    def parse_header(self, buffer: Any) -> Any:
        return self._response.parse_header(buffer)

    def decode(self, buffer: Any) -> T:
        return self._decode(buffer.read())


class _Header:
    def __init__(self, inner: Any, answer: _AnswerType[Any]) -> None:
        self._answer = answer
        self.correlation_id = inner.correlation_id
        self.api_key = inner.request_api_key
        self.api_version = inner.request_api_version

    def get_response_class(self) -> _AnswerType[Any]:
        return self._answer


class DecodedRequest(Generic[T]):
    """A kafka-python request (built from its generated classes) sent at `version`, whose answer the
    connection hands to `decode` as bytes (after the response header) instead of building objects.
    `response` is the kafka-python response class of that API (its header parser for the version)."""

    def __init__(self, request: Any, version: int, response: Any, decode: Callable[[bytes], T]) -> None:
        self.API_KEY = request.API_KEY
        self.API_VERSION = version
        self._inner = request
        self._answer = _AnswerType(response[version], decode)
        self.header: _Header | None = None

    def with_header(self, correlation_id: int = 0, client_id: str = "kafka-python") -> None:
        self._inner.with_header(correlation_id=correlation_id, client_id=client_id)
        self.header = _Header(self._inner.header, self._answer)

    def encode(self, framed: bool = False, header: bool = False) -> bytes:
        return bytes(self._inner.encode(version=self.API_VERSION, framed=framed, header=header))

    def expect_response(self) -> bool:
        return True
