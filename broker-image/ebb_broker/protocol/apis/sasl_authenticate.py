"""SaslAuthenticate: v0-2 (API key 36)

Behaviour:
- Carries one SASL token of the mechanism SaslHandshake chose (KIP-152) and answers the server's
  token; every successful step gets a response, the last one completes authentication and the
  connection's principal becomes `User:<user>`.
- SCRAM-SHA-256/512 are checked against the SCRAM credential store; PLAIN against a fast salted
  hash of the password of the users given one at start, the same work for an unknown user
  (security/sasl.py, security/credentials.py).
- A failure answers SASL_AUTHENTICATION_FAILED with Kafka's message (for SCRAM the same for an
  unknown user and a wrong password), after `connection.failed.authentication.delay.ms`, and
  closes the connection after the response.
- Without a SaslHandshake first, or after authentication: ILLEGAL_SASL_STATE.

Version notes:
- v1: session_lifetime_ms (always 0: KIP-368 re-authentication is not served).
- v2: flexible.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafka.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from kafka.protocol.sasl import SaslAuthenticateRequest

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.security.sasl import SaslAuthenticationFailed

API_KEY = 36
log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> Any:
    session = ctx.session
    server = session.sasl
    if session.authenticated or server is None:
        session.close_after_response = not session.authenticated
        return ctx.response(
            error_code=IllegalSaslStateError.errno,
            error_message="SaslAuthenticate without a SaslHandshake, or after authentication",
            auth_bytes=b"",
            session_lifetime_ms=0,
        )
    token = bytes(request.auth_bytes or b"")
    try:
        answer = server.step(token)
    except SaslAuthenticationFailed as exc:
        log.info(
            "authentication failed from %s on %s with %s",
            session.client_host,
            session.listener,
            server.mechanism,
        )
        ctx.broker.metrics.connections_rejected.labels("authentication").inc()
        await asyncio.sleep(ctx.broker.config.connection_failed_authentication_delay_ms / 1000)
        session.close_after_response = True
        return ctx.response(
            error_code=SaslAuthenticationFailedError.errno,
            error_message=str(exc),
            auth_bytes=b"",
            session_lifetime_ms=0,
        )
    if server.complete:
        session.principal = f"User:{server.user}"
        session.authenticated = True
        session.sasl = None
        log.debug(
            "%s authenticated from %s with %s", session.principal, session.client_host, server.mechanism
        )
    return ctx.response(error_code=0, error_message=None, auth_bytes=answer, session_lifetime_ms=0)


register(API_KEY, 0, 2, handle)
