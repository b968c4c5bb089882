"""ApiVersions: v0-4 (API key 18)

Behaviour:
- Answers from the registry only: every registered key with its advertised range.
- Any version is accepted: one this broker does not know gets a v0 body with UNSUPPORTED_VERSION
  and the key list, so the client can retry with a version both sides speak (KIP-511).
- No features are advertised (no transaction.version / group.version: KIP-848 is not served).

Version notes:
- v1: throttle_time_ms.
- v3: flexible; client software name and version in the request (KIP-511), ignored here.
- v4: no change on the broker side (KIP-896 bookkeeping).
"""

from __future__ import annotations

from typing import Any

from kafka.errors import UnsupportedVersionError
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from ebb_broker.protocol.codec import messages_for
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import all_specs, register

API_KEY = 18
_MESSAGES = messages_for(API_KEY)


def _api_keys(response_cls: Any) -> list[Any]:
    return [
        response_cls.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
        for s in all_specs()
    ]


def unsupported_version_response(correlation_id: int) -> bytes:
    """The v0 body Kafka sends for an ApiVersions version it does not know."""
    cls = _MESSAGES.response[0]
    body = cls(error_code=UnsupportedVersionError.errno, api_keys=_api_keys(cls))
    body.with_header(correlation_id=correlation_id)
    return bytes(body.encode(header=True, framed=True))


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> Any:
    return ctx.response(error_code=0, api_keys=_api_keys(ctx.response_class), throttle_time_ms=0)


register(API_KEY, 0, 4, handle)
