# The test control plane (harness/k8s): kube-apiserver, etcd, kubectl and helm of the pinned
# versions in harness/k8s/versions.env, built from the Go module proxy into
# $(EBB_CACHE)/k8s/<pin>/bin once and reused until the pin changes.
.PHONY: harness-k8s controlplane

TEST_PREREQS += harness-k8s

harness-k8s:
	@harness/k8s/build.sh

# A real etcd + kube-apiserver in the foreground: prints the kubeconfig and how to use kubectl; Ctrl-C
# stops it and deletes its data.
controlplane: venv harness-k8s
	@$(PY) -m harness.controlplane
