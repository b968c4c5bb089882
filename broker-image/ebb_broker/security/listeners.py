"""Kafka's listener configs: ``listeners``, ``advertised.listeners``, ``listener.security.protocol.map``.

``NAME://host:port`` entries, comma-separated; an empty host binds every interface; port 0 binds a free
port (advertised as the one bound). The map names each listener's security protocol; by default the
four protocol names map to themselves, as in Kafka.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in PROTOCOLS)

_ENTRY = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>[0-9]+)")


class ListenerConfigError(ValueError):
    """A listener setting that cannot be served; the message names the key."""


@dataclass(frozen=True)
class Endpoint:
    """One listener: its name, security protocol, and host/port (to bind, or to advertise)."""

    name: str
    security_protocol: str
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


def parse_protocol_map(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",") if i.strip()):
        name, sep, protocol = item.partition(":")
        if not sep or not name or protocol not in PROTOCOLS:
            raise ListenerConfigError(
                f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL with PROTOCOL one of "
                + ", ".join(PROTOCOLS)
            )
        out[name.upper()] = protocol
    return out


def parse_listeners(text: str, protocols: dict[str, str], key: str = "listeners") -> list[Endpoint]:
    """The entries of ``listeners`` (or ``advertised.listeners``) with their security protocols."""
    out: list[Endpoint] = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        m = _ENTRY.fullmatch(item)
        if m is None:
            raise ListenerConfigError(f"{key}: {item!r} is not NAME://host:port")
        name = m["name"].upper()
        if name not in protocols:
            raise ListenerConfigError(
                f"{key}: listener {name} has no security protocol in listener.security.protocol.map"
            )
        if any(e.name == name for e in out):
            raise ListenerConfigError(f"{key}: listener {name} is given twice")
        port = int(m["port"])
        if port > 65535:
            raise ListenerConfigError(f"{key}: port {port} of {name} is out of range")
        out.append(Endpoint(name, protocols[name], m["host"].strip("[]"), port))
    if not out:
        raise ListenerConfigError(f"{key}: no listener given")
    return out


def advertised(
    listeners: list[Endpoint], advertised_text: str | None, protocols: dict[str, str]
) -> dict[str, tuple[str, int]]:
    """What Metadata answers per listener: ``advertised.listeners`` where given, else the listener itself
    (an empty host advertises this machine's name); port 0 means "the port actually bound"."""
    given = (
        {e.name: e for e in parse_listeners(advertised_text, protocols, "advertised.listeners")}
        if (advertised_text)
        else {}
    )
    names = {e.name for e in listeners}
    for name in given:
        if name not in names:
            raise ListenerConfigError(f"advertised.listeners: {name} is not one of the listeners")
    out: dict[str, tuple[str, int]] = {}
    for e in listeners:
        a = given.get(e.name, e)
        host = a.host or socket.getfqdn()
        if host in ("0.0.0.0", "::"):
            raise ListenerConfigError(
                f"advertised.listeners: {e.name} cannot advertise the non-routable address {host}; "
                "set advertised.listeners (or --advertised-host)"
            )
        out[e.name] = (host, a.port)
    return out
