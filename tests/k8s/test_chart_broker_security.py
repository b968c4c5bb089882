"""The chart's broker is SASL_SSL by default: the CA, certificate and admin password its install hook makes
are kept by an upgrade (no template renders them: they are in no release manifest), and a broker started
with exactly the rendered arguments (the kubelet's $(VAR) expansion done here) serves a client that uses
the default KafkaCluster's credentials Secret. No kubelet runs pods on this tier: the broker is a local
process with the pod's arguments, the hook Jobs' commands local processes (harness.chart_hooks)."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import yaml

from harness.chart_hooks import helm_with_hooks, hooks, run, uninstall_with_hooks
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from tests.compat.clients import CLIENTS, Security

CHART = Path(__file__).resolve().parents[2] / "charts" / "ebb"


def _secret(control_plane: ControlPlane, namespace: str, name: str) -> dict[str, str]:
    data = control_plane.kubectl_json("get", "secret", name, "-n", namespace)["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def _broker_args(rendered: str) -> list[str]:
    (sts,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "StatefulSet"]
    return list(sts["spec"]["template"]["spec"]["containers"][0]["args"])


def test_generated_credentials_survive_an_upgrade_and_serve_sasl_ssl(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    namespace = "chart-broker-security"
    # No operator runs here: without one to serve it, the webhook would refuse every tenant object.
    values = ("--set", "crds.enabled=false", "--set", "operator.webhook.enabled=false")
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART.parents[1] / "crds"))
    flags = ("--create-namespace", "--take-ownership")
    helm_with_hooks(
        control_plane, "install", "sec", CHART, namespace, values=values, flags=flags, log_dir=tmp_path
    )
    tls = _secret(control_plane, namespace, "sec-ebb-broker-tls")
    admin = _secret(control_plane, namespace, "sec-ebb-broker-admin")
    client = _secret(control_plane, namespace, "sec-ebb-broker-client")
    assert client["sasl.password"] == admin["password"] and len(admin["password"]) == 32
    assert client["ssl.ca.pem"] == tls["ca.crt"]
    kc = control_plane.kubectl_json("get", "kafkacluster", "ebb")["spec"]
    assert kc["credentials"]["secretRef"]["name"] == "sec-ebb-broker-client"
    policy = control_plane.kubectl_json("get", "networkpolicy", "sec-ebb-broker", "-n", namespace)["spec"]
    peers = policy["ingress"][0]["from"]
    assert peers[0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "operator"
    assert peers[2]["podSelector"]["matchLabels"] == {"ebb.dev/kafka-client": "true"}

    uid = control_plane.kubectl_json("get", "kafkacluster", "ebb")["metadata"]["uid"]
    helm_with_hooks(control_plane, "upgrade", "sec", CHART, namespace, values=values, log_dir=tmp_path)
    assert _secret(control_plane, namespace, "sec-ebb-broker-tls") == tls
    assert _secret(control_plane, namespace, "sec-ebb-broker-admin") == admin
    assert _secret(control_plane, namespace, "sec-ebb-broker-client") == client
    assert control_plane.kubectl_json("get", "kafkacluster", "ebb")["metadata"]["uid"] == uid

    # The pod's arguments, with the Secrets the kubelet would expand into them.
    rendered = control_plane.helm("get", "manifest", "sec", "--namespace", namespace).stdout
    assert "kind: Secret" not in rendered  # made by the hook, so no upgrade or uninstall deletes them
    env = {
        "TLS_CERT": tls["tls.crt"],
        "TLS_KEY": tls["tls.key"],
        "ADMIN_PASSWORD": admin["password"],
        "POD_NAME": "p",
    }
    configs: dict[str, str] = {}
    scram: list[str] = []
    for arg in _broker_args(rendered):
        arg = re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], arg)
        if arg.startswith("--config="):
            key, value = arg.removeprefix("--config=").split("=", 1)
            configs[key] = value
        elif arg.startswith("--add-scram="):
            scram.append(arg.removeprefix("--add-scram="))
    assert configs["listeners"] == "SASL_SSL://0.0.0.0:9092"
    assert configs["authorizer.class.name"].endswith("StandardAuthorizer")
    # Bound on a free loopback port, advertised as localhost (a name the generated certificate covers).
    configs.update({"listeners": "SASL_SSL://127.0.0.1:0", "advertised.listeners": "SASL_SSL://localhost:0"})
    ca = tmp_path / "ca.pem"
    ca.write_text(client["ssl.ca.pem"])
    with EbbBroker(tmp_path / "data", configs=configs, add_scram=scram, log_dir=tmp_path) as broker:
        props: dict[str, Any] = client
        c = CLIENTS["confluent-kafka"](
            f"localhost:{broker.listener_ports['SASL_SSL']}",
            Security(
                props["security.protocol"],
                props["sasl.mechanism"],
                props["sasl.username"],
                props["sasl.password"],
                cafile=str(ca),
            ),
        )
        c.create_topic("chart-secured")
        c.produce("chart-secured", [(None, b"with the chart's credentials")])
        assert [r.value for r in c.consume("chart-secured", 1)] == [b"with the chart's credentials"]
    uninstall_with_hooks(control_plane, "sec", namespace, log_dir=tmp_path)


def test_with_cert_manager_the_hook_makes_the_issuers_ca_and_the_client_trusts_what_it_signs(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """broker.security.certManager: the pre-install hook makes the CA the chart's Issuer signs with (once),
    and the post-install hook waits for the broker's certificate and gives the operator its CA. No
    cert-manager runs here: its CA Issuer's part (sign with the CA Secret, write the TLS Secret with
    ca.crt) is played by this test, with the same material the hook uses."""
    from ebb_operator.install import material

    namespace = "chart-cert-manager"
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART.parents[1] / "crds"))
    control_plane.kubectl("create", "namespace", namespace)
    values = ("--set", "broker.security.certManager.enabled=true", "--set", "operator.defaultCluster.name=cm")
    rendered = control_plane.helm("template", "cm", str(CHART), "--namespace", namespace, *values).stdout
    (certificate,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Certificate"]
    assert certificate["spec"]["issuerRef"] == {
        "name": "cm-ebb-broker-ca",
        "kind": "Issuer",
        "group": "cert-manager.io",
    }
    assert certificate["spec"]["secretName"] == "cm-ebb-broker-tls"

    run(control_plane, hooks(rendered, "pre-install"), namespace, tmp_path)
    ca_secret = _secret(control_plane, namespace, "cm-ebb-broker-ca")
    assert "cm-ebb-broker-tls" not in control_plane.kubectl("get", "secrets", "-n", namespace).stdout
    run(control_plane, hooks(rendered, "pre-install"), namespace, tmp_path)  # a second run changes nothing
    assert _secret(control_plane, namespace, "cm-ebb-broker-ca") == ca_secret

    ca = material.KeyPair(ca_secret["tls.crt"], ca_secret["tls.key"])
    issued = material.server_certificate(
        ca, "cm-ebb-broker", certificate["spec"]["dnsNames"], ["127.0.0.1"], 1
    )
    control_plane.kubectl(
        "create", "secret", "generic", "cm-ebb-broker-tls", "-n", namespace,
        f"--from-literal=tls.crt={issued.cert}", f"--from-literal=tls.key={issued.key}",
        f"--from-literal=ca.crt={ca.cert}",
    )  # fmt: skip
    run(control_plane, hooks(rendered, "post-install"), namespace, tmp_path)
    client = _secret(control_plane, namespace, "cm-ebb-broker-client")
    assert client["ssl.ca.pem"] == ca.cert
    assert client["sasl.password"] == _secret(control_plane, namespace, "cm-ebb-broker-admin")["password"]
    kc = control_plane.kubectl_json("get", "kafkacluster", "cm")["spec"]
    assert kc["credentials"]["secretRef"]["name"] == "cm-ebb-broker-client"
