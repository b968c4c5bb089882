"""security.authorizer: Kafka's StandardAuthorizer decisions and the ACL filters of the ACL APIs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ebb_broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from ebb_broker.security.authorizer import Authorizer, parse_super_users

Op, T, P, Perm = AclOperation, ResourceType, PatternType, PermissionType
ALICE, BOB = "User:alice", "User:bob"


def acl(
    name: str,
    op: AclOperation,
    *,
    principal: str = ALICE,
    rtype: ResourceType = T.TOPIC,
    pattern: PatternType = P.LITERAL,
    host: str = "*",
    perm: PermissionType = Perm.ALLOW,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authz(tmp_path: Path, *acls: AclBinding, **kw: object) -> Authorizer:
    tmp_path.mkdir(parents=True, exist_ok=True)
    a = Authorizer(tmp_path, **kw)  # type: ignore[arg-type]
    a.create(acls)
    return a


def test_allow_implies_describe_deny_implies_nothing(tmp_path: Path) -> None:
    a = authz(tmp_path, acl("orders", Op.READ), acl("orders", Op.DESCRIBE, perm=Perm.DENY, principal=BOB),
              acl("orders", Op.READ, principal=BOB), acl("cfg", Op.ALTER_CONFIGS))  # fmt: skip
    assert a.authorize(ALICE, "10.0.0.1", Op.READ, T.TOPIC, "orders")
    assert a.authorize(ALICE, "10.0.0.1", Op.DESCRIBE, T.TOPIC, "orders")  # READ implies DESCRIBE
    assert not a.authorize(ALICE, "10.0.0.1", Op.WRITE, T.TOPIC, "orders")
    assert not a.authorize(ALICE, "10.0.0.1", Op.DELETE, T.TOPIC, "orders")
    assert a.authorize(BOB, "10.0.0.1", Op.READ, T.TOPIC, "orders")  # DENY DESCRIBE leaves READ alone
    assert not a.authorize(
        BOB, "10.0.0.1", Op.DESCRIBE, T.TOPIC, "orders"
    )  # deny wins over the implied allow
    assert a.authorize(ALICE, "1.2.3.4", Op.DESCRIBE_CONFIGS, T.TOPIC, "cfg")  # ALTER_CONFIGS implies it


def test_patterns_wildcards_hosts_and_all(tmp_path: Path) -> None:
    a = authz(
        tmp_path,
        acl("team-", Op.WRITE, pattern=P.PREFIXED),
        acl("*", Op.READ, principal="User:*"),
        acl("team-secret", Op.ALL, perm=Perm.DENY),
        acl("kafka-cluster", Op.ALL, rtype=T.CLUSTER, host="10.0.0.9"),
    )
    assert a.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "team-orders")
    assert not a.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "other")
    assert a.authorize(BOB, "h", Op.READ, T.TOPIC, "anything")  # User:* on *
    assert not a.authorize(ALICE, "h", Op.READ, T.TOPIC, "team-secret")  # DENY ALL
    assert a.authorize(ALICE, "10.0.0.9", Op.CREATE, T.CLUSTER, "kafka-cluster")
    assert not a.authorize(ALICE, "10.0.0.8", Op.CREATE, T.CLUSTER, "kafka-cluster")


def test_no_acl_found_super_users_and_authorized_operations(tmp_path: Path) -> None:
    strict = authz(
        tmp_path / "s", acl("orders", Op.READ), super_users=parse_super_users("User:admin; User:ops")
    )
    assert not strict.authorize(BOB, "h", Op.READ, T.TOPIC, "free")
    assert strict.authorize("User:ops", "h", Op.DELETE, T.TOPIC, "orders")
    assert not strict.authorize(BOB, "h", Op.READ, T.TOPIC, "orders")  # ACLs exist: no fallback
    lax = authz(tmp_path / "l", acl("orders", Op.READ), allow_if_no_acl=True)
    assert lax.authorize(BOB, "h", Op.DELETE, T.TOPIC, "free")
    assert not lax.authorize(BOB, "h", Op.READ, T.TOPIC, "orders")
    ops = strict.authorized_operations(ALICE, "h", T.TOPIC, "orders")
    assert ops == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_authorize_any_is_kip_679s_write_on_any_topic(tmp_path: Path) -> None:
    a = authz(
        tmp_path,
        acl("payments", Op.WRITE),
        acl("pay", Op.WRITE, pattern=P.PREFIXED, perm=Perm.DENY, principal=BOB),
        acl("payments", Op.WRITE, principal=BOB),
        acl("x", Op.WRITE, principal="User:carol"),
        acl("*", Op.WRITE, perm=Perm.DENY, principal="User:carol"),
    )
    assert a.authorize_any(ALICE, "h", Op.WRITE, T.TOPIC)
    assert not a.authorize_any(BOB, "h", Op.WRITE, T.TOPIC)  # its only ALLOW is under a DENY prefix
    assert not a.authorize_any("User:carol", "h", Op.WRITE, T.TOPIC)  # DENY on *
    assert not a.authorize_any("User:dave", "h", Op.WRITE, T.TOPIC)


def test_filters_as_describe_and_delete_acls_use_them(tmp_path: Path) -> None:
    a = authz(
        tmp_path,
        acl("orders", Op.READ),
        acl("ord", Op.WRITE, pattern=P.PREFIXED),
        acl("*", Op.READ, principal=BOB),
    )
    every = AclBindingFilter(T.ANY, None, P.ANY, None, None, Op.ANY, Perm.ANY)
    assert len(a.describe(every)) == 3
    match = AclBindingFilter(T.TOPIC, "orders", P.MATCH, None, None, Op.ANY, Perm.ANY)
    assert len(a.describe(match)) == 3  # literal, prefix and wildcard all apply to "orders"
    literal = AclBindingFilter(T.TOPIC, "orders", P.LITERAL, None, None, Op.ANY, Perm.ANY)
    assert [b.operation for b in a.describe(literal)] == [Op.READ]
    assert AclBindingFilter(T.UNKNOWN, None, P.ANY, None, None, Op.ANY, Perm.ANY).invalid_reason()
    (gone,) = a.delete([AclBindingFilter(T.TOPIC, None, P.PREFIXED, ALICE, None, Op.ANY, Perm.ANY)])
    assert [b.resource_name for b in gone] == ["ord"]
    again = Authorizer(tmp_path)
    assert {b.resource_name for b in again.describe(every)} == {"orders", "*"}
    assert stat.S_IMODE((tmp_path / "ebb-acls.json").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "binding",
    [
        AclBinding(T.ANY, "x", P.LITERAL, ALICE, "*", Op.READ, Perm.ALLOW),
        AclBinding(T.TOPIC, "x", P.MATCH, ALICE, "*", Op.READ, Perm.ALLOW),
        AclBinding(T.TOPIC, "x", P.LITERAL, ALICE, "*", Op.ANY, Perm.ALLOW),
        AclBinding(T.TOPIC, "", P.LITERAL, ALICE, "*", Op.READ, Perm.ALLOW),
        AclBinding(T.CLUSTER, "my-cluster", P.LITERAL, ALICE, "*", Op.ALTER, Perm.ALLOW),
        AclBinding(T.TOPIC, "x", P.LITERAL, "alice", "*", Op.READ, Perm.ALLOW),
    ],
)
def test_create_acls_refuses_what_kafka_refuses(binding: AclBinding) -> None:
    assert binding.invalid_reason()
