"""protocol.purgatory: parked fetches wake only for the partitions they watch, and leave nothing behind."""

from __future__ import annotations

import asyncio

from ebb_broker.protocol.purgatory import FetchPurgatory


def test_an_append_wakes_only_the_fetches_watching_its_partition() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        on_a = asyncio.create_task(purgatory.wait([("a", 0), ("a", 1)], 30))
        on_b = asyncio.create_task(purgatory.wait([("b", 0)], 30))
        await asyncio.sleep(0)
        assert purgatory.size == 2
        purgatory.complete([("c", 0), ("a", 5)])
        await asyncio.sleep(0)
        assert not on_a.done() and not on_b.done() and purgatory.wakeups == 0
        purgatory.complete([("a", 1), ("a", 1)])
        await asyncio.wait_for(on_a, 5)
        assert not on_b.done() and purgatory.wakeups == 1 and purgatory.size == 1
        on_b.cancel()  # the connection closed (idle): its fetch leaves the purgatory
        await asyncio.gather(on_b, return_exceptions=True)
        assert purgatory.size == 0 and not purgatory._watchers

    asyncio.run(scenario())


def test_a_fetch_that_waited_its_max_wait_leaves_no_watcher() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        await purgatory.wait([("a", 0)], 0.01)
        assert purgatory.size == 0 and not purgatory._watchers and purgatory.wakeups == 0

    asyncio.run(scenario())
