"""DescribeCluster: v0-1 (API key 60)

Behaviour:
- This broker is the whole cluster and its controller (KIP-700), unfenced.
- Endpoint type 2 (controllers) answers the same node: the broker is its own controller.

Version notes:
- v1: endpoint type (KIP-919). v2 (fenced brokers) is not advertised.
"""

from __future__ import annotations

from typing import Any

from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register

API_KEY = 60
_NOT_REQUESTED = None  # the codec writes None as -2147483648: "not requested" (no ACLs)


async def handle(ctx: RequestContext, request: Any) -> Any:
    me = ctx.broker.identity
    host, port = ctx.advertised  # the listener this request came in on
    cls = ctx.response_class
    return ctx.response(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=request.endpoint_type if ctx.api_version >= 1 else 1,
        cluster_id=me.cluster_id,
        controller_id=me.node_id,
        brokers=[cls.DescribeClusterBroker(broker_id=me.node_id, host=host, port=port, rack=None)],
        authorized_operations=_NOT_REQUESTED,
    )


register(API_KEY, 0, 1, handle)
