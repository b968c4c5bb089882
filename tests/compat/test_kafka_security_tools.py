"""Kafka's own tools over SASL_SSL (SCRAM-SHA-512) with the StandardAuthorizer, against ebb-broker and
Apache Kafka 4.3 side by side (issue 11, "Tests"): the same commands, the same outcomes.

One scenario per broker: `kafka-configs` adds and describes a SCRAM user; `kafka-acls` adds a producer's
and a consumer's ACLs, lists them, removes one; the console producer and consumer run as that user;
`kafka-delete-records` is refused for her (no DELETE on the topic: nothing deleted) and works for the
admin. JVM tools cost seconds each, so the scenario is the minimum that covers every tool once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.kafka import apache_kafka, kafka_tool
from harness.tls import TestCA
from tests.compat.clients import CLIENTS, Security
from tests.compat.conftest import SecureBroker

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass
class Target:
    name: str
    bootstrap: str  # the SASL_SSL listener
    ca: TestCA
    work: Path

    def props(self, user: str, password: str) -> Path:
        path = self.work / f"{self.name}-{user}.properties"
        path.write_text(
            Security(
                "SASL_SSL", "SCRAM-SHA-512", user, password, cafile=str(self.ca.ca_pem)
            ).java_properties()
        )
        return path


@pytest.fixture(scope="module")
def apache_sasl_ssl(
    tmp_path_factory: pytest.TempPathFactory, secure_broker: SecureBroker
) -> Iterator[Target]:
    """Apache Kafka with the same SASL_SSL listener config as the shared ebb-broker (same CA and keys)."""
    work = tmp_path_factory.mktemp("apache-sasl-ssl")
    ca = secure_broker.ca
    server = ca.issue("apache-broker", "CN=localhost", server=True)
    overrides = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.ca_pem),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }
    users = tuple(
        f"SCRAM-SHA-512=[name={u},password={p}]"
        for u, p in secure_broker.passwords.items()
        if u in ("admin", "alice")
    )
    with apache_kafka(
        work / "kafka", overrides, listeners={"SASL_SSL": "SASL_SSL"}, add_scram=users
    ) as kafka:
        yield Target("apache-kafka", kafka.bootstrap_of("SASL_SSL"), ca, work)


def _tool(*args: str, input: str | None = None, check: bool = True) -> str:
    out = kafka_tool(*args, input=input, check=check, timeout=90)
    return out.stdout + out.stderr


def _scenario(t: Target, topic: str, group: str, admin_pw: str, alice_pw: str) -> dict[str, str]:
    B = t.bootstrap
    admin, alice = t.props("admin", admin_pw), t.props("alice", alice_pw)
    A = ("--bootstrap-server", B, "--command-config", str(admin))
    out: dict[str, str] = {}
    dave = "SCRAM-SHA-512=[iterations=8192,password=dave-secret]"
    out["configs_alter"] = _tool(
        "kafka-configs",
        *A,
        "--alter",
        "--add-config",
        dave,
        "--entity-type",
        "users",
        "--entity-name",
        "dave",
    )
    out["configs_describe"] = _tool(
        "kafka-configs", *A, "--describe", "--entity-type", "users", "--entity-name", "dave"
    )
    CLIENTS["confluent-kafka"](
        B, Security("SASL_SSL", "SCRAM-SHA-512", "admin", admin_pw, cafile=str(t.ca.ca_pem))
    ).create_topic(topic)
    out["acls_add"] = _tool(
        "kafka-acls", *A, "--add", "--allow-principal", "User:alice", "--producer", "--consumer",
        "--topic", topic, "--group", group,
    )  # fmt: skip
    out["acls_remove"] = _tool(
        "kafka-acls", *A, "--remove", "--allow-principal", "User:alice", "--operation", "Create",
        "--topic", topic, "--force",
    )  # fmt: skip
    out["acls_list"] = _tool("kafka-acls", *A, "--list", "--topic", topic, "--resource-pattern-type", "match")
    out["produce"] = _tool(
        "kafka-console-producer", "--bootstrap-server", B, "--producer.config", str(alice), "--topic", topic,
        input="one\ntwo\nthree\n",
    )  # fmt: skip
    out["consume"] = _tool(
        "kafka-console-consumer", "--bootstrap-server", B, "--consumer.config", str(alice), "--topic", topic,
        "--group", group, "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000",
    )  # fmt: skip
    offsets = t.work / f"{t.name}-offsets.json"
    offsets.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 2}], "version": 1})
    )
    delete = ("kafka-delete-records", "--bootstrap-server", B, "--offset-json-file", str(offsets))
    out["delete_alice"] = _tool(*delete, "--command-config", str(alice), check=False)
    out["delete_admin"] = _tool(*delete, "--command-config", str(admin))
    return out


def _check(out: dict[str, str], topic: str) -> None:
    assert "Completed updating config for user dave" in out["configs_alter"]
    assert (
        "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-512=iterations=8192"
        in out["configs_describe"]
    )
    listed = out["acls_list"]
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in listed
    for op in ("WRITE", "DESCRIBE", "READ"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in listed
    assert "operation=CREATE" not in listed  # removed
    assert [line for line in out["consume"].splitlines() if line in ("one", "two", "three")] == [
        "one",
        "two",
        "three",
    ]
    assert (
        "TopicAuthorizationException" in out["delete_alice"]
        or "Topic authorization failed" in out["delete_alice"]
    )
    assert "low_watermark: 2" in out["delete_admin"]


def _normal(text: str) -> list[str]:
    """Tool output without timing, log and JVM noise, for comparing the two brokers."""
    keep = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not re.match(r"^\[|^\d{4}-|^WARN|^SLF4J", line)
    ]
    return sorted(keep)


def test_kafka_tools_over_sasl_ssl_side_by_side(
    secure_broker: SecureBroker, apache_sasl_ssl: Target, tmp_path: Path
) -> None:
    sb = secure_broker
    ebb = Target("ebb-broker", sb.broker.bootstrap_of("SASL_SSL"), sb.ca, tmp_path)
    pw = sb.passwords
    # The two brokers' scenarios run at once: each step is a JVM start, mostly one busy core.
    with ThreadPoolExecutor(2) as pool:
        futures = {
            t.name: pool.submit(_scenario, t, "tools-orders", "tools-group", pw["admin"], pw["alice"])
            for t in (ebb, apache_sasl_ssl)
        }
        results = {name: f.result(timeout=600) for name, f in futures.items()}
    for out in results.values():
        _check(out, "tools-orders")
    for key in ("configs_describe", "acls_add", "acls_list"):
        assert _normal(results["ebb-broker"][key]) == _normal(results["apache-kafka"][key]), key
    # Nothing of alice's refused delete happened on either broker: the admin's delete moved 0 -> 2.
    for target in (ebb, apache_sasl_ssl):
        admin = CLIENTS["confluent-kafka"](
            target.bootstrap,
            Security("SASL_SSL", "SCRAM-SHA-512", "admin", pw["admin"], cafile=str(sb.ca.ca_pem)),
        )
        assert admin.earliest("tools-orders", 0) == 2
