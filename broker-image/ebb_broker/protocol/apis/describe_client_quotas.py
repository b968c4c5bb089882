"""DescribeClientQuotas: v0-1 (API key 48)

Behaviour:
- ebb-broker enforces no client quotas (KIP-546's producer_byte_rate, consumer_byte_rate,
  request_percentage...), so every filter matches no entity: the answer is an empty list, which is
  what Kafka answers where none are configured. Served so that `kafka-configs --describe
  --entity-type users`, which asks for quotas beside SCRAM credentials, works.
- Needs DESCRIBE_CONFIGS on CLUSTER when an authorizer is configured (else
  CLUSTER_AUTHORIZATION_FAILED).

Version notes:
- v1: flexible.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 48


async def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> Any:
    if not allowed(ctx, Op.DESCRIBE_CONFIGS, CLUSTER):
        return ctx.response(
            throttle_time_ms=0,
            error_code=CLUSTER_AUTHORIZATION_FAILED,
            error_message="DESCRIBE_CONFIGS on the cluster is not allowed",
            entries=None,
        )
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, entries=[])


register(API_KEY, 0, 1, handle)
