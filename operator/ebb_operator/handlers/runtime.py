"""What every handler shares, built once at start and handed over as kopf's memo (`memo.runtime`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import kopf

from ebb_operator.kafka import AdminPool
from ebb_operator.settings import OperatorSettings


@dataclass
class Runtime:
    settings: OperatorSettings
    admins: AdminPool
    # KafkaCluster name or inline bootstrap -> the cluster id DescribeCluster answered: a cluster's
    # identity, whatever string names it (CompactionConfig ownership is decided per real cluster).
    cluster_ids: dict[str, str] = field(default_factory=dict)
    # Engine Local's analysis jobs running in this process (settings.local_analysis_runs at most).
    local_analysis_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))

    @classmethod
    def create(cls, settings: OperatorSettings) -> Runtime:
        pool = AdminPool(
            idle_seconds=settings.admin_idle_seconds, request_timeout=settings.kafka_request_timeout_seconds
        )
        return cls(settings, pool, local_analysis_slots=asyncio.Semaphore(settings.local_analysis_runs))


def runtime(memo: kopf.Memo) -> Runtime:
    found = memo.get("runtime")
    if not isinstance(found, Runtime):
        raise RuntimeError("the operator was started without its runtime (python -m ebb_operator sets it)")
    return found
