"""DescribeCluster: v0-1 (API key 60)

Behaviour:
- This broker is the whole cluster and its controller (KIP-700), unfenced.
- No authorization check, as Kafka's brokers (its docs list DESCRIBE on CLUSTER; its code checks
  nothing): the cluster id must stay readable to every client. Authorized operations, when
  requested, are the session's on the CLUSTER, or 0 without DESCRIBE on it (Kafka's AuthHelper).
- Endpoint type 2 (controllers) answers the same node: the broker is its own controller.

Version notes:
- v1: endpoint type (KIP-919). v2 (fenced brokers) is not advertised.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.cluster import DescribeClusterRequest

from ebb_broker.protocol.authz import CLUSTER, NOT_REQUESTED, Op, allowed, authorized_operations
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.registry import register
from ebb_broker.security.acl import CLUSTER_NAME

API_KEY = 60


def _cluster_operations(ctx: RequestContext) -> set[int]:
    """Kafka's AuthHelper: the session's operations on the CLUSTER, or none without DESCRIBE on it."""
    return authorized_operations(ctx, CLUSTER, CLUSTER_NAME) if allowed(ctx, Op.DESCRIBE, CLUSTER) else set()


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> Any:
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
        authorized_operations=_cluster_operations(ctx)
        if request.include_cluster_authorized_operations
        else NOT_REQUESTED,
    )


register(API_KEY, 0, 1, handle)
