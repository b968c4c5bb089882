"""What the chart's hook Jobs run (`python -m ebb_operator.install STEP`, the operator image), so that no
template generates anything: `helm template` renders the same bytes every time, and GitOps tools that render
with it (Argo CD) never replace a CA or a password.

- `prepare` (pre-install, pre-upgrade): the broker's credentials, made once where no Secret holds them
  (secrets.py: a CA and certificate, or the CA cert-manager's Issuer signs with; the admin password), and
  the Secrets an earlier chart rendered marked `helm.sh/resource-policy: keep` before Helm would delete them.
- `finish` (post-install, post-upgrade): the default KafkaCluster's client Secret (the admin password and
  the broker's CA, however it was issued) and the KafkaCluster itself, applied (default_cluster.py).
- `release-finalizers` (pre-delete): Ebb's finalizer taken off every Ebb object (finalizers.py), so that
  nothing waits for an operator that is going away.
"""
