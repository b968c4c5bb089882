"""Kubeconfig files for the test control plane: one for the admin (client certificate), one per
ServiceAccount token, in the format kubectl, helm, kopf and the `kubernetes` client all read."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_cert: Path,
    user: str,
    client_cert: Path | None = None,
    client_key: Path | None = None,
    token: str | None = None,
    namespace: str = "default",
) -> Path:
    """Write a kubeconfig with one cluster, one user and one current context, credentials inline.

    Exactly one of a client certificate (with its key) or a bearer token authenticates the user.
    """
    if (token is None) == (client_cert is None):
        raise ValueError("a kubeconfig user needs exactly one of token= or client_cert=/client_key=")
    credentials: dict[str, str]
    if token is not None:
        credentials = {"token": token}
    else:
        if client_key is None:
            raise ValueError("client_cert= needs client_key=")
        assert client_cert is not None
        credentials = {
            "client-certificate-data": _b64(client_cert),
            "client-key-data": _b64(client_key),
        }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "ebb-test",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [
            {"name": user, "context": {"cluster": "ebb-test", "user": user, "namespace": namespace}}
        ],
        "current-context": user,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)  # it holds credentials
    return path
