"""The request fields of the three ACL APIs as the security package's model (shared by their modules)."""

from __future__ import annotations

import enum
from typing import Any, TypeVar

from ebb_broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)

E = TypeVar("E", bound=enum.IntEnum)


def code(cls: type[E], value: int) -> E:
    """The enum member, or its UNKNOWN (0) for a code this broker does not know."""
    try:
        return cls(value)
    except ValueError:
        return cls(0)


def binding_filter(f: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter (v0 has no pattern type: LITERAL)."""
    return AclBindingFilter(
        code(ResourceType, f.resource_type_filter),
        f.resource_name_filter,
        code(PatternType, getattr(f, "pattern_type_filter", PatternType.LITERAL)),
        f.principal_filter,
        f.host_filter,
        code(AclOperation, f.operation),
        code(PermissionType, f.permission_type),
    )


def creation(c: Any) -> AclBinding:
    return AclBinding(
        code(ResourceType, c.resource_type),
        c.resource_name,
        code(PatternType, getattr(c, "resource_pattern_type", PatternType.LITERAL)),
        c.principal,
        c.host,
        code(AclOperation, c.operation),
        code(PermissionType, c.permission_type),
    )
