"""DescribeLogDirs: v1-4 (API key 35)

Behaviour:
- One log directory (the --data-dir) with the size in bytes of each requested partition (null
  topics = all), offset lag 0 and no future replicas; v4 adds the file system's total and
  usable bytes. Needs DESCRIBE on the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED at the top level
  and no results, as Kafka). The operator reads reclaimed bytes from it before and after DeleteRecords.
- Each requested partition is answered once, however often the request names it (Kafka takes them as a
  set).

Version notes:
- v1: no change. v2: flexible. v3: top-level error code. v4: total and usable bytes (KIP-827).
- v5 (cordoned, KIP-1066) is not advertised.
"""

from __future__ import annotations

import shutil
from typing import Any

from kafka.protocol.admin.cluster import DescribeLogDirsRequest

from ebb_broker.protocol.authz import CLUSTER, CLUSTER_AUTHORIZATION_FAILED, Op, allowed
from ebb_broker.protocol.context import RequestContext
from ebb_broker.protocol.duplicates import partitions_once
from ebb_broker.protocol.registry import register
from ebb_broker.protocol.topics import has_partition

API_KEY = 35


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> Any:
    if not allowed(ctx, Op.DESCRIBE, CLUSTER):
        return ctx.response(throttle_time_ms=0, error_code=CLUSTER_AUTHORIZATION_FAILED, results=[])
    logs = ctx.broker.logs
    all_topics = logs.topics()
    cls = ctx.response_class
    R = cls.DescribeLogDirsResult
    T = R.DescribeLogDirsTopic
    P = T.DescribeLogDirsPartition
    if request.topics is None:
        wanted = {name: list(range(meta.partitions)) for name, meta in all_topics.items()}
    else:
        named, _repeated = partitions_once(
            request.topics, lambda t: t.topic, lambda t: t.partitions, lambda p: p
        )
        wanted = {
            name: [p for p in partitions if has_partition(all_topics, name, p)]
            for name, partitions in named.items()
        }
    topics = [
        T(
            name=name,
            partitions=[
                P(
                    partition_index=p,
                    partition_size=logs.get_log(name, p).size_in_bytes(),
                    offset_lag=0,
                    is_future_key=False,
                )
                for p in parts
            ],
        )
        for name, parts in sorted(wanted.items())
        if parts
    ]
    usage = shutil.disk_usage(ctx.broker.data_dir)
    result = R(
        error_code=0,
        log_dir=str(ctx.broker.data_dir.resolve()),
        topics=topics,
        total_bytes=usage.total,
        usable_bytes=usage.free,
    )
    return ctx.response(throttle_time_ms=0, error_code=0, results=[result])


register(API_KEY, 1, 4, handle)
