"""RBAC and ServiceAccount tokens on the real API server: the operator will run under the Helm chart's
ServiceAccount with a TokenRequest token, so a token must authenticate and RBAC must grant exactly what
the bindings say, to kubectl and to the Python client kopf uses alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes
import pytest

from harness.controlplane import CommandFailed, ControlPlane
from harness.kubeconfig import write_kubeconfig


def reader_kubeconfig(cp: ControlPlane, namespace: str) -> Path:
    """ServiceAccount `reader` bound to a Role that may only read ConfigMaps in `namespace`."""
    ns = ("--namespace", namespace)
    cp.kubectl("create", "serviceaccount", "reader", *ns)
    cp.kubectl("create", "role", "configmap-reader", "--verb=get,list,watch", "--resource=configmaps", *ns)
    cp.kubectl(
        "create",
        "rolebinding",
        "reader",
        "--role=configmap-reader",
        f"--serviceaccount={namespace}:reader",
        *ns,
    )
    return cp.service_account_kubeconfig(namespace, "reader")


def test_service_account_token_authenticates_as_the_service_account(
    control_plane: ControlPlane, k8s_namespace: str
) -> None:
    kubeconfig = reader_kubeconfig(control_plane, k8s_namespace)
    review = json.loads(control_plane.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig).stdout)
    assert review["status"]["userInfo"]["username"] == f"system:serviceaccount:{k8s_namespace}:reader"
    assert f"system:serviceaccounts:{k8s_namespace}" in review["status"]["userInfo"]["groups"]


def test_role_grants_what_it_says_and_nothing_more(control_plane: ControlPlane, k8s_namespace: str) -> None:
    kubeconfig = reader_kubeconfig(control_plane, k8s_namespace)
    control_plane.kubectl(
        "create", "configmap", "settings", "--from-literal=k=v", "--namespace", k8s_namespace
    )

    listed = control_plane.kubectl(
        "get", "configmaps", "--namespace", k8s_namespace, "-o", "name", kubeconfig=kubeconfig
    )
    assert "configmap/settings" in listed.stdout.split()

    denied = [
        ("create", "configmap", "mine", "--namespace", k8s_namespace),  # verb not granted
        ("get", "secrets", "--namespace", k8s_namespace),  # resource not granted
        ("get", "configmaps", "--namespace", "default"),  # namespace not granted
        ("get", "namespaces"),  # cluster scope not granted
    ]
    for args in denied:
        forbidden = f'is forbidden: User "system:serviceaccount:{k8s_namespace}:reader"'
        with pytest.raises(CommandFailed, match=re.escape(forbidden)):
            control_plane.kubectl(*args, kubeconfig=kubeconfig)


def test_python_client_sees_the_same_rbac(control_plane: ControlPlane, k8s_namespace: str) -> None:
    """kopf logs in through the `kubernetes` package when it is installed, as it is in the operator."""
    kubeconfig = reader_kubeconfig(control_plane, k8s_namespace)
    client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    try:
        core = kubernetes.client.CoreV1Api(client)
        assert core.list_namespaced_config_map(k8s_namespace).items == []
        with pytest.raises(kubernetes.client.ApiException, match=r"\(403\)"):
            body = kubernetes.client.V1ConfigMap(
                metadata=kubernetes.client.V1ObjectMeta(name="x"), data={"k": "v"}
            )
            core.create_namespaced_config_map(k8s_namespace, body)
    finally:
        client.close()


def test_token_not_signed_by_the_cluster_is_unauthorized(
    control_plane: ControlPlane, k8s_namespace: str
) -> None:
    forged = write_kubeconfig(
        control_plane.workdir / "kubeconfigs" / f"forged-{k8s_namespace}.yaml",
        server=control_plane.server,
        ca_cert=control_plane.pki.ca_cert,
        user="intruder",
        token="eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4ifQ.c2lnbmF0dXJl",
    )
    with pytest.raises(CommandFailed, match="must be logged in to the server"):  # kubectl's words for a 401
        control_plane.kubectl("get", "configmaps", "--namespace", k8s_namespace, kubeconfig=forged)


def test_token_request_for_a_missing_service_account_fails_clearly(
    control_plane: ControlPlane, k8s_namespace: str
) -> None:
    with pytest.raises(CommandFailed, match='serviceaccounts "nobody" not found'):
        control_plane.service_account_kubeconfig(k8s_namespace, "nobody")
