"""Kafka's ACL model: resource patterns, bindings and filters, with the codes of Kafka's common.acl.

A binding says: ``principal`` from ``host`` is ALLOWed or DENYed ``operation`` on the resources that a
pattern (``LITERAL`` name, the wildcard ``*``, or a ``PREFIXED`` name) selects. Filters (DescribeAcls,
DeleteAcls) match bindings with ``ANY`` for enums and None for strings; ``MATCH`` selects every binding
that applies to one resource name (exact, wildcard or prefix).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

# The operations each resource type knows (also the domain of authorized operations).
VALID_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
        Op.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}  # fmt: skip

# An ALLOW of any of these also allows the key (Kafka's implied operations); DENY implies nothing.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    Op.DESCRIBE: frozenset({Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.ALTER_CONFIGS}),
}


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL (Kafka's AclBinding: a ResourcePattern and an AccessControlEntry)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def applies_to(self, resource_name: str) -> bool:
        """Whether the pattern selects ``resource_name``."""
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (resource_name, WILDCARD)
        return self.pattern_type == PatternType.PREFIXED and resource_name.startswith(self.resource_name)

    def invalid_reason(self) -> str | None:
        """Why CreateAcls refuses this binding (INVALID_REQUEST), or None (Kafka's AclControlManager)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return "Invalid resource type"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "Invalid pattern type"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return "Invalid operation"
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            return "Invalid permission type"
        if not self.resource_name:
            return "Resource name should not be empty"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        if ":" not in self.principal or not self.principal.split(":", 1)[1]:
            return f"Could not parse principal from `{self.principal}`"
        if not self.host:
            return "Invalid host"
        return None


@dataclass(frozen=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter: ANY/None match anything; MATCH = every binding that applies to the name."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: PermissionType

    def invalid_reason(self) -> str | None:
        for value, what in (
            (self.resource_type, "resource type"),
            (self.pattern_type, "pattern type"),
            (self.operation, "operation"),
            (self.permission, "permission type"),
        ):
            if value == 0:
                return f"Invalid {what} UNKNOWN in the filter"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and b.resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is not None and not b.applies_to(self.resource_name):
                return False
        else:
            if self.pattern_type != PatternType.ANY and b.pattern_type != self.pattern_type:
                return False
            if self.resource_name is not None and b.resource_name != self.resource_name:
                return False
        if self.principal is not None and b.principal != self.principal:
            return False
        if self.host is not None and b.host != self.host:
            return False
        if self.operation != AclOperation.ANY and b.operation != self.operation:
            return False
        return self.permission == PermissionType.ANY or b.permission == self.permission
