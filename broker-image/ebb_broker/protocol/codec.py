"""The wire codec: Kafka's generated message classes from kafka-python 3's `kafka.protocol`.

kafka-python 3 builds one class per request/response from Apache Kafka's JSON message specs; it
decodes every version (legacy ones included, since it resets each minimum to 0) and skips unknown
tagged fields as the spec requires. It has no server-side lookup, so this module builds one by
walking its `ApiMessage` subclasses once at import.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import kafka.protocol as _kp
from kafka.protocol.api_message import ApiMessage


@dataclass(frozen=True)
class MessagePair:
    """The request and response classes of one API key (unversioned primary classes)."""

    api_key: int
    request: Any
    response: Any

    @property
    def name(self) -> str:
        """The API's name, as Kafka's specs call it (JoinGroup, DeleteRecords, ...)."""
        return str(self.request.name).removesuffix("Request")


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _load() -> dict[int, MessagePair]:
    for mod in pkgutil.walk_packages(_kp.__path__, _kp.__name__ + "."):
        importlib.import_module(mod.name)
    requests: dict[int, Any] = {}
    responses: dict[int, Any] = {}
    for cls in _subclasses(ApiMessage):
        msg: Any = cls
        # Versioned wrappers (Foo_v3) carry a _class_version; only the primary classes count.
        if msg._class_version is not None or getattr(msg, "_json", None) is None:
            continue
        table = requests if msg.is_request() else responses
        table[msg.API_KEY] = msg
    return {k: MessagePair(k, requests[k], responses[k]) for k in sorted(requests) if k in responses}


MESSAGES: dict[int, MessagePair] = _load()


def messages_for(api_key: int) -> MessagePair:
    """The codec classes of `api_key`; KeyError when kafka-python has no spec for it."""
    return MESSAGES[api_key]
