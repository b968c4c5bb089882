"""The table of implemented API keys and version ranges: the only source of ApiVersions.

Each protocol module registers its key once at import (as franz-go's kfake does with `regKey`);
a second registration of the same key is a programming error and raises at import.

A handler is `async def handle(ctx: RequestContext, request: <the API's generated request class>)`: the
server decodes the request with `messages.request`, the class kafka-python 3 generates from Kafka's JSON
spec, and the handler's annotation names that class (`from kafka.protocol... import JoinGroupRequest`).
kafka-python ships no type information, so to mypy those classes are Any (a typed Protocol per API
would restate 42 specs by hand); the annotation is still checked, by a unit test that it names the class
the server decodes with (tests/unit/broker/protocol/test_registry.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ebb_broker.protocol.codec import MessagePair, messages_for
from ebb_broker.protocol.context import RequestContext

Handler = Callable[[RequestContext, Any], Awaitable[Any | None]]
"""A handler gets the decoded request and returns the response body, or None for no reply (acks=0)."""


@dataclass(frozen=True)
class ApiSpec:
    """One implemented API: advertised range, the versions actually served, and its handler."""

    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    messages: MessagePair
    # Versions advertised but refused with UNSUPPORTED_VERSION (Produce 0-2, see produce.py).
    rejected_below: int = 0

    @property
    def name(self) -> str:
        return self.messages.name


class DuplicateApiError(RuntimeError):
    """Two modules registered the same API key."""


_REGISTRY: dict[int, ApiSpec] = {}


def register(
    api_key: int, min_version: int, max_version: int, handler: Handler, *, rejected_below: int = 0
) -> ApiSpec:
    """Register `handler` for `api_key` versions min..max; raises on a duplicate or an invalid range."""
    if api_key in _REGISTRY:
        raise DuplicateApiError(f"API key {api_key} registered twice")
    messages = messages_for(api_key)
    top = messages.request.max_version
    if not 0 <= min_version <= max_version <= top:
        raise ValueError(f"API key {api_key}: range {min_version}-{max_version} outside codec 0-{top}")
    spec = ApiSpec(api_key, min_version, max_version, handler, messages, rejected_below)
    _REGISTRY[api_key] = spec
    return spec


def lookup(api_key: int) -> ApiSpec | None:
    return _REGISTRY.get(api_key)


def all_specs() -> list[ApiSpec]:
    """Every registered API in key order (what ApiVersions answers)."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
