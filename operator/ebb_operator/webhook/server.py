"""The admission webhook's HTTPS server: kopf's WebhookServer, with a certificate every replica shares.

kopf serves `@kopf.on.validate` handlers over HTTPS and restarts its server when the certificate files
change. The certificate comes from one of two places:

- EBB_WEBHOOK_CERT_DIR (the chart with cert-manager): tls.crt, tls.key and ca.crt of a mounted Secret,
  which the kubelet refreshes when cert-manager renews it; cert-manager's CA injector writes ca.crt into
  the ValidatingWebhookConfiguration.
- otherwise the operator's own CA and certificate (webhook/certificates.py) in Secret `ebb-webhook-tls`
  of its namespace: created once by whichever replica comes first, renewed before expiry by whichever
  replica sees it due (a replace at the resourceVersion read, so two replicas never both win), read by
  all. Each replica copies it into files for kopf and puts the CA bundle into the
  ValidatingWebhookConfiguration the chart rendered.

With EBB_WEBHOOK_MANAGED (a local process: tests, `make demo`) the operator registers the whole
configuration itself, its clientConfig the URL of this process, and withdraws it when it stops.

The server runs in kopf's admission task, beside and independent of the reconcilers: every replica
answers admission requests, leader or not.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import kopf

from ebb_operator import kube, metrics, rbac
from ebb_operator.settings import OperatorSettings
from ebb_operator.webhook import configuration
from ebb_operator.webhook.certificates import Certificates, renew

log = logging.getLogger(__name__)
SECRET = rbac.WEBHOOK_SECRET  # in the operator's namespace (the RBAC rules name it)
# How often a replica looks at the shared Secret: renewals are due weeks ahead, so an hour is plenty.
KEEP_SECONDS = 3600.0
# How often kopf re-reads the certificate files (and restarts its server when they changed).
FILE_CHECK_SECONDS = 10.0
_GLOB = frozenset("*?[!")


class CertificateKeeper:
    """The shared Secret, in files kopf's server reads (blocking: runs in a worker thread)."""

    def __init__(self, namespace: str, hosts: list[str], directory: Path) -> None:
        self.namespace = namespace
        self.hosts = hosts
        self.directory = directory

    def sync(self) -> Certificates:
        for _ in range(3):  # a lost race with another replica: read what it wrote
            try:
                data, version = kube.read_tls_secret(self.namespace, SECRET)
            except kube.NotFoundError:
                data, version = None, ""
            current = Certificates.from_secret(data) if data is not None else None
            renewed = renew(current, self.hosts, datetime.datetime.now(datetime.UTC))
            if renewed is None and current is not None:
                self._write(current)
                return current
            assert renewed is not None
            try:
                if data is None:
                    kube.create_tls_secret(self.namespace, SECRET, renewed.to_secret())
                else:
                    kube.replace_tls_secret(self.namespace, SECRET, renewed.to_secret(), version)
            except kube.KubeApiError as exc:
                if exc.status != 409:
                    raise
                continue
            log.info("webhook certificate for %s written to Secret %s/%s", self.hosts, self.namespace, SECRET)
            self._write(renewed)
            return renewed
        raise RuntimeError(f"Secret {self.namespace}/{SECRET} keeps changing under the operator")

    def _write(self, certs: Certificates) -> None:
        for name, text in (("ca.crt", certs.ca_bundle), ("tls.crt", certs.cert), ("tls.key", certs.key)):
            path = self.directory / name
            if path.exists() and path.read_text() == text:
                continue
            fd, tmp = tempfile.mkstemp(dir=self.directory)  # mode 0600
            with os.fdopen(fd, "w") as out:
                out.write(text)
            Path(tmp).replace(path)  # kopf never reads half a file


class AdmissionServer(kopf.WebhookServer):
    """kopf's server, its certificate kept by CertificateKeeper or mounted, its configuration published."""

    def __init__(self, settings: OperatorSettings) -> None:
        assert settings.webhook_port is not None
        self.ebb = settings
        self.keeper: CertificateKeeper | None = None
        if settings.webhook_cert_dir:
            directory = Path(settings.webhook_cert_dir)
        else:
            directory = Path(tempfile.mkdtemp(prefix="ebb-webhook-"))
            self.keeper = CertificateKeeper(settings.namespace, [settings.webhook_address], directory)
        self.url: str | None = None
        super().__init__(
            addr=settings.listen_host,
            port=settings.webhook_port,
            host=settings.webhook_address,
            certfile=directory / "tls.crt",
            pkeyfile=directory / "tls.key",
            cafile=directory / "ca.crt",
            file_check_interval=FILE_CHECK_SECONDS,
        )

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        keeper, keeping = self.keeper, None
        if keeper is not None:
            certs = await asyncio.to_thread(keeper.sync)  # the files exist before kopf's server reads them
            if not self.ebb.webhook_managed:  # the CA is in the configuration before the port answers
                await self._publish({"caBundle": base64.b64encode(certs.ca_bundle.encode()).decode()})
            keeping = asyncio.create_task(self._keep(keeper))
        try:
            async for client_config in super().__call__(fn):
                metrics.WEBHOOK_READY.set(1 if await self._publish(client_config) else 0)
                yield client_config
        finally:
            metrics.WEBHOOK_READY.set(0)
            if keeper is not None and keeping is not None:
                keeping.cancel()
                shutil.rmtree(keeper.directory, ignore_errors=True)  # the private key goes too

    async def _keep(self, keeper: CertificateKeeper) -> None:
        while True:
            await asyncio.sleep(KEEP_SECONDS)
            try:
                await asyncio.to_thread(keeper.sync)
            except Exception as exc:  # the API server may be away for a while: the next pass retries
                log.warning("webhook certificate not checked: %s", exc)

    async def _publish(self, client_config: kopf.WebhookClientConfig) -> bool:
        """Tell the API server how to reach this server and which CA to trust; False when it could not be
        told (the log says why)."""
        ca_bundle = client_config.get("caBundle") or ""
        try:
            if self.ebb.webhook_managed:
                self.url = client_config.get("url") or ""
                body = configuration.configuration(
                    self.url, ca_bundle, served_namespaces(self.ebb.namespaces)
                )
                await asyncio.to_thread(kube.apply_webhook_configuration, body)
                log.info("ValidatingWebhookConfiguration %s points at %s", configuration.NAME, self.url)
            elif self.keeper is not None and await asyncio.to_thread(
                kube.set_webhook_ca_bundle, configuration.NAME, ca_bundle
            ):
                log.info("CA bundle written into ValidatingWebhookConfiguration %s", configuration.NAME)
        except kube.NotFoundError:
            log.warning("no ValidatingWebhookConfiguration %s: nothing calls the webhook", configuration.NAME)
        except kube.KubeApiError as exc:
            log.error("ValidatingWebhookConfiguration %s not updated: %s", configuration.NAME, exc)
            return False
        return True

    def withdraw(self) -> None:
        """A managed configuration goes with the process that registered it (blocking)."""
        if not self.ebb.webhook_managed or self.url is None:
            return
        with contextlib.suppress(kube.KubeApiError):
            current = kube.read_webhook_configuration(configuration.NAME)
            urls = {h.get("clientConfig", {}).get("url", "") for h in current.get("webhooks") or []}
            if any(u.startswith(self.url) for u in urls):  # not one another process registered since
                kube.delete_webhook_configuration(configuration.NAME)


def served_namespaces(namespaces: tuple[str, ...]) -> tuple[str, ...]:
    """The namespaces to limit the tenant webhooks to: the operator's, when all are plain names."""
    return () if any(_GLOB.intersection(n) for n in namespaces) else namespaces
