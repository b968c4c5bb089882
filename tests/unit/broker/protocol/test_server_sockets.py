"""protocol.server: how accepted client sockets are set up."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace

from ebb_broker.metrics import BrokerMetrics
from ebb_broker.protocol.server import KafkaServer, Listener


def test_accepted_connections_do_not_wait_for_delayed_acks() -> None:
    """Kafka's Acceptor sets TCP_NODELAY on every connection: a Fetch response is written in parts (its
    header, then the records by sendfile), and with Nagle's algorithm on, the records wait for the
    client's delayed ACK of the header, 40 ms on Linux, before they leave (the hostile-client harness's
    health consumer saw every control record 42 ms late)."""

    async def scenario() -> int:
        # The server only counts the connection in the broker's metrics before the first request.
        broker = SimpleNamespace(metrics=BrokerMetrics())
        server = KafkaServer(broker, [Listener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0)])  # type: ignore[arg-type]
        await server.start()
        client = socket.create_connection(("127.0.0.1", server.port))
        try:
            for _ in range(200):
                if server._connections:
                    break
                await asyncio.sleep(0.01)
            (conn,) = server._connections
            sock = conn.writer.get_extra_info("socket")
            return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        finally:
            client.close()
            await server.close()

    assert asyncio.run(scenario()) == 1
