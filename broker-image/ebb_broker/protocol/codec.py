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


# -- requests that break their schema ---------------------------------------------------------------

_MAYBE_NULL = frozenset({"string", "bytes", "records"})
# Per (struct, version): the fields a decoder can leave None, as (name, nullable, kind, child struct).
_PLANS: dict[tuple[int, int], tuple[tuple[str, bool, str, Any], ...]] = {}


def decode_request(message: Any, frame: bytes, version: int) -> Any:
    """Decode a request frame (header included); ValueError when a field its schema says is not
    nullable was sent as null.

    kafka-python reads a -1 length as None whatever the schema says, so without this check a null
    group id or topic name would reach the handlers (and the coordinator's records). Kafka's generated
    readers throw "non-nullable field groupId was serialized as null", and Kafka refuses the request
    whole by closing the connection; the server does the same with what this raises.
    """
    request = message.decode(frame, version=version, header=True)
    _reject_nulls(message._struct, request, version)
    return request


def _plan(struct: Any, version: int) -> tuple[tuple[str, bool, str, Any], ...]:
    key = (id(struct), version)
    plan = _PLANS.get(key)
    if plan is None:
        entries = []
        for f in struct._fields:
            if not f.for_version_q(version):
                continue
            nullable = bool(f.nullable_for_version_q(version))
            if f.is_struct_array():
                child = f.array_of
                entries.append((f.name, nullable, "structs" if _plan(child, version) else "value", child))
            elif f.is_array():
                kind = "strings" if f.array_of.type_str in _MAYBE_NULL else "value"
                entries.append((f.name, nullable, kind, None))
            elif f.is_struct():
                if nullable or _plan(f, version):
                    entries.append((f.name, nullable, "struct", f))
            elif f.type_str in _MAYBE_NULL:
                entries.append((f.name, nullable, "value", None))
        plan = _PLANS[key] = tuple(entries)
    return plan


def _reject_nulls(struct: Any, obj: Any, version: int) -> None:
    for name, nullable, kind, child in _plan(struct, version):
        value = getattr(obj, name)
        if value is None:
            if not nullable:
                raise ValueError(f"non-nullable field {name} was serialized as null")
        elif kind == "structs":
            for item in value:
                _reject_nulls(child, item, version)
        elif kind == "struct":
            _reject_nulls(child, value, version)
        elif kind == "strings" and any(v is None for v in value):
            raise ValueError(f"non-nullable field {name} has a null element")


# -- responses --------------------------------------------------------------------------------------

_INT16_STRING_BYTES = 2**15 - 1


def fit_error_messages(response: Any, version: int) -> bool:
    """Cut every error message of `response` longer than a non-flexible string can carry (32,767 UTF-8
    bytes); True when one was cut. A message that names what a client sent (a topic name of 32,767
    bytes) would otherwise make the whole answer unencodable."""
    return _fit(type(response)._struct, response, version)


def _fit(struct: Any, obj: Any, version: int) -> bool:
    cut = False
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        value = getattr(obj, f.name, None)
        if value is None:
            continue
        if f.is_struct_array():
            for item in value:
                cut = _fit(f.array_of, item, version) or cut
        elif f.is_struct():
            cut = _fit(f, value, version) or cut
        elif f.type_str == "string" and f.name.endswith("message"):
            data = value.encode()
            if len(data) > _INT16_STRING_BYTES:
                setattr(obj, f.name, data[:_INT16_STRING_BYTES].decode(errors="ignore"))
                cut = True
    return cut
