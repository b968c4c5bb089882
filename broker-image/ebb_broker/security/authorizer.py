"""Kafka's StandardAuthorizer on one node: who may do what, from ACLs kept in the data directory.

Enabled by ``authorizer.class.name`` (``org.apache.kafka.metadata.authorizer.StandardAuthorizer``, or the
ZooKeeper-era ``kafka.security.authorizer.AclAuthorizer`` with the same semantics); without it every
check passes, as in Kafka. The decision for (principal, client address, operation, resource):

1. a principal listed in ``super.users`` (``User:admin;User:ops``) is allowed everything;
2. the ACLs on the resource are the LITERAL ones with its name or ``*`` and the PREFIXED ones whose
   name prefixes it; of those, the ones for the principal (or ``User:*``) from ``*`` or the client's
   address (the text of the IP, no DNS, no CIDR) count;
3. any counting DENY of the operation (or ALL) denies: DENY implies nothing else;
4. otherwise any counting ALLOW of the operation, ALL, or an operation that implies it (READ, WRITE,
   DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
5. otherwise, when no ACL at all exists on the resource, ``allow.everyone.if.no.acl.found`` decides
   (default false), else it is denied.

ACLs are written to ``ebb-acls.json`` (0600, atomically) before a change is answered, and read at start.
Lookups index bindings by resource type (a dict of literal names, a list of prefixes), so a check costs a
few dictionary reads: Produce and Fetch check once per topic per request.

Thread-safety: the event loop owns it; the file write runs on the caller's thread.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from ebb_broker.security import store
from ebb_broker.security.acl import (
    IMPLIED_BY,
    VALID_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)

FILE = "ebb-acls.json"
FILE_VERSION = 1
# The values of authorizer.class.name that turn the authorizer on (Kafka's own class names).
AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's ``super.users``: principals separated by ``;`` (``User:admin;User:CN=ops,O=Example``)."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())


class Authorizer:
    """ACLs and the decisions made from them."""

    def __init__(
        self, data_dir: Path, super_users: Iterable[str] = (), allow_if_no_acl: bool = False
    ) -> None:
        self.path = data_dir / FILE
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._tables: tuple[
            frozenset[AclBinding],
            dict[ResourceType, dict[str, list[AclBinding]]],
            dict[ResourceType, list[AclBinding]],
        ] = (frozenset(), {}, {})
        doc = store.read(self.path, FILE_VERSION)
        self._index(
            {
                AclBinding(
                    ResourceType[a["resource_type"]],
                    a["resource_name"],
                    PatternType[a["pattern_type"]],
                    a["principal"],
                    a["host"],
                    AclOperation[a["operation"]],
                    PermissionType[a["permission"]],
                )
                for a in (doc or {}).get("acls", [])
            }
        )

    def _index(self, acls: Iterable[AclBinding]) -> None:
        """Build the lookup tables, then swap them in with one assignment: a check running meanwhile (the
        file write runs in a worker thread) sees the old ACLs or the new ones, never a mix."""
        literal: dict[ResourceType, dict[str, list[AclBinding]]] = defaultdict(lambda: defaultdict(list))
        prefixed: dict[ResourceType, list[AclBinding]] = defaultdict(list)
        for b in acls:
            if b.pattern_type == PatternType.LITERAL:
                literal[b.resource_type][b.resource_name].append(b)
            else:
                prefixed[b.resource_type].append(b)
        self._tables = (frozenset(acls), literal, prefixed)

    @property
    def _acls(self) -> frozenset[AclBinding]:
        return self._tables[0]

    def _save(self, acls: frozenset[AclBinding]) -> None:
        store.write_private(
            self.path,
            {
                "version": FILE_VERSION,
                "acls": [
                    {
                        "resource_type": b.resource_type.name,
                        "resource_name": b.resource_name,
                        "pattern_type": b.pattern_type.name,
                        "principal": b.principal,
                        "host": b.host,
                        "operation": b.operation.name,
                        "permission": b.permission.name,
                    }
                    for b in sorted(acls)
                ],
            },
        )

    # -- decisions --------------------------------------------------------------------------------------

    def _on_resource(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        _acls, literals, prefixes = self._tables
        literal = literals.get(resource_type)
        out: list[AclBinding] = []
        if literal:
            out += literal.get(name, ())
            if name != WILDCARD:
                out += literal.get(WILDCARD, ())
        out += [b for b in prefixes.get(resource_type, ()) if name.startswith(b.resource_name)]
        return out

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        acls = self._on_resource(resource_type, name)
        if not acls:
            return self.allow_if_no_acl
        allowed = False
        implied_by = IMPLIED_BY.get(operation, frozenset())
        for b in acls:
            if b.principal not in (principal, WILDCARD_PRINCIPAL) or b.host not in (WILDCARD, host):
                continue
            if b.permission == PermissionType.DENY:
                if b.operation in (operation, AclOperation.ALL):
                    return False
            elif b.operation in (operation, AclOperation.ALL) or b.operation in implied_by:
                allowed = True
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Kafka's authorizeByResourceType (KIP-679's "WRITE on any topic"): whether some resource of the
        type could be allowed, i.e. an ALLOW of the operation exists that no DENY for the principal covers
        (a DENY on ``*`` covers everything; a LITERAL or PREFIXED DENY covers what its pattern selects)."""
        if principal in self.super_users:
            return True
        relevant = [
            b
            for b in self._acls
            if b.resource_type == resource_type
            and b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in (WILDCARD, host)
            and b.operation in (operation, AclOperation.ALL)
        ]
        if not any(b.resource_type == resource_type for b in self._acls):
            return self.allow_if_no_acl
        denies = [b for b in relevant if b.permission == PermissionType.DENY]
        if any(d.pattern_type == PatternType.LITERAL and d.resource_name == WILDCARD for d in denies):
            return False
        for a in relevant:
            if a.permission != PermissionType.ALLOW:
                continue
            if not any(d.applies_to(a.resource_name) for d in denies):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """Kafka's authorized-operations bit field: bit n set when operation code n is allowed."""
        bits = 0
        for op in VALID_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits

    # -- the ACL APIs --------------------------------------------------------------------------------------

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self._acls if acl_filter.matches(b)]

    def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add bindings (an existing one is kept once); written before they take effect."""
        acls = self._acls | set(bindings)
        if acls != self._acls:
            self._save(acls)
            self._index(acls)

    def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; returns the matches per filter (written before they go)."""
        matched = [[b for b in self._acls if f.matches(b)] for f in filters]
        gone = {b for m in matched for b in m}
        if gone:
            acls = self._acls - gone
            self._save(acls)
            self._index(acls)
        return matched
