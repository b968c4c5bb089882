"""The API client: in-cluster credentials in a pod, else $KUBECONFIG (the same login kopf uses)."""

from __future__ import annotations

import threading

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

_lock = threading.Lock()
_api: client.ApiClient | None = None


def api_client() -> client.ApiClient:
    global _api
    with _lock:
        if _api is None:
            try:
                config.load_incluster_config()
            except ConfigException:
                config.load_kube_config()
            _api = client.ApiClient()
        return _api


def reset_client() -> None:
    """Forget the cached client (tests that switch clusters or credentials)."""
    global _api
    with _lock:
        _api = None
