"""What a handler sees: the broker's state owners and the header of the request it answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ebb_broker.protocol.codec import MessagePair
from ebb_broker.protocol.purgatory import FetchPurgatory

if TYPE_CHECKING:
    from ebb_broker.config import BrokerConfig
    from ebb_broker.coordinator.group_coordinator import GroupCoordinator
    from ebb_broker.coordinator.producer_ids import ProducerIdManager
    from ebb_broker.coordinator.transaction_coordinator import TransactionCoordinator
    from ebb_broker.dynamic_config import DynamicBrokerConfig
    from ebb_broker.log import LogManager
    from ebb_broker.metrics import BrokerMetrics
    from ebb_broker.quota.manager import ClientQuotas
    from ebb_broker.security.authorizer import Authorizer
    from ebb_broker.security.credentials import CredentialStore
    from ebb_broker.security.sasl import MechanismServer


@dataclass(frozen=True)
class BrokerIdentity:
    """How this broker names itself in Metadata, FindCoordinator and DescribeCluster."""

    node_id: int
    host: str
    port: int
    cluster_id: str
    # Listener name -> (host, port) advertised on it: Kafka answers on the listener a request came in on.
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)

    def endpoint(self, listener: str) -> tuple[str, int]:
        return self.endpoints.get(listener, (self.host, self.port))


@dataclass
class Activity:
    """When a connection last moved bytes, for `connections.max.idle.ms`.

    Kafka's Selector counts a channel idle when no bytes moved on it for that long, whatever it waits
    for: a request parked in a purgatory, or a response its client does not read, is idleness. A handler
    at work is not (``working``): the server sets it while a request is being handled, and a handler
    that parks the request clears it for the wait (``waiting``).
    """

    last: float = 0.0
    working: bool = False

    def touch(self) -> None:
        self.last = asyncio.get_running_loop().time()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        working, self.working = self.working, False
        try:
            yield
        finally:
            self.working = working


@dataclass
class Broker:
    """The single owner of mutable state; handlers change it only through `logs` and `groups`.

    Every handler runs on the one event loop (franz-go kfake's single cluster loop), so the state
    needs no locks beyond the ones the log engine takes for its worker-thread retention and cleaner.
    """

    identity: BrokerIdentity
    config: BrokerConfig
    logs: LogManager
    groups: GroupCoordinator
    metrics: BrokerMetrics
    producer_ids: ProducerIdManager
    data_dir: Path
    credentials: CredentialStore
    quotas: ClientQuotas
    # None unless authorizer.class.name is set: then every API checks ACLs (protocol/authz.py).
    authorizer: Authorizer | None = None
    fetches: FetchPurgatory = field(default_factory=FetchPurgatory)
    # AlterConfigs on BROKER resources change `config` through it (None: brokers assembled without one).
    dynamic_config: DynamicBrokerConfig | None = None
    transactions: TransactionCoordinator | None = None


ANONYMOUS = "User:ANONYMOUS"


@dataclass
class Session:
    """Who is on the other end of one connection (Kafka's RequestContext principal and listener).

    ``principal`` is Kafka's ``Type:name`` string: ``User:ANONYMOUS`` on PLAINTEXT (and on SSL without a
    client certificate), the certificate's DN on mTLS, the SASL user once SASL succeeded.
    ``authenticated`` is False on SASL listeners until the handshake completed.
    """

    listener: str
    security_protocol: str
    client_host: str
    principal: str = ANONYMOUS
    authenticated: bool = True
    # SASL listeners: the mechanisms enabled there, and the exchange in progress after SaslHandshake.
    sasl_mechanisms: tuple[str, ...] = ()
    sasl: MechanismServer | None = None
    # Set by a handler whose response must be the connection's last (failed authentication).
    close_after_response: bool = False


@dataclass
class RequestContext:
    """One decoded request: the broker, its API's request and response classes, the header fields, the
    session."""

    broker: Broker
    messages: MessagePair
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    session: Session = field(default_factory=lambda: Session("PLAINTEXT", "PLAINTEXT", "?"))
    activity: Activity = field(default_factory=Activity)
    # The request's size on the wire (header and body, as Kafka's request.sizeInBytes), for byte quotas.
    request_size: int = 0
    # Set by a handler that throttles the client (KIP-219): the server answers at once, then reads
    # nothing more from the connection for this long.
    throttle_ms: int = 0

    def response(self, **fields: Any) -> Any:
        """A response body of this request's API at this request's version."""
        return self.messages.response[self.api_version](**fields)

    @property
    def response_class(self) -> Any:
        return self.messages.response[self.api_version]

    @property
    def advertised(self) -> tuple[str, int]:
        """This broker's (host, port) on the listener the request came in on."""
        return self.broker.identity.endpoint(self.session.listener)
