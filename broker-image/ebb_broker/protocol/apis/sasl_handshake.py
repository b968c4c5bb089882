"""SaslHandshake: v1 (API key 17)

Behaviour:
- Picks the SASL mechanism for the connection (KIP-43/KIP-152); the tokens then travel in
  SaslAuthenticate. The response lists the mechanisms enabled on this listener
  (`sasl.enabled.mechanisms`, or `listener.name.<l>.sasl.enabled.mechanisms`).
- A mechanism not enabled answers UNSUPPORTED_SASL_MECHANISM and the connection is closed after
  the response, as Kafka does. A second SaslHandshake while the exchange the first one began is
  in progress answers ILLEGAL_SASL_STATE and closes the connection (Kafka's SaslServerAuthenticator:
  only SaslAuthenticate may follow a handshake). On a listener without SASL, or once the connection
  authenticated, it answers ILLEGAL_SASL_STATE and the connection stays open, as Kafka's KafkaApis
  (re-authentication, KIP-368, is not served).
- Before authentication a SASL connection may send only ApiVersions, SaslHandshake and
  SaslAuthenticate: anything else closes it (server.py).

Version notes:
- v0 (raw tokens without a Kafka header after the handshake) is not advertised (as kfake).
- v1: tokens in SaslAuthenticate.
"""

from __future__ import annotations

from typing import Any

from kafka.errors import IllegalSaslStateError, UnsupportedSaslMechanismError
from kafka.protocol.sasl import SaslHandshakeRequest

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.security.sasl import new_server

API_KEY = 17


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> Any:
    session = ctx.session
    enabled = list(session.sasl_mechanisms)
    if session.authenticated or session.sasl is not None:
        session.close_after_response = not session.authenticated  # mid-exchange: the connection ends
        return ctx.response(error_code=IllegalSaslStateError.errno, mechanisms=enabled)
    if request.mechanism not in enabled:
        session.close_after_response = True
        return ctx.response(error_code=UnsupportedSaslMechanismError.errno, mechanisms=enabled)
    session.sasl = new_server(request.mechanism, ctx.broker.credentials)
    return ctx.response(error_code=0, mechanisms=enabled)


register(API_KEY, 1, 1, handle)
