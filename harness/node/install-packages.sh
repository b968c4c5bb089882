#!/usr/bin/env bash
# The Debian packages the cluster tier's node and image builds need (harness/node.py checks the same
# list): containerd and runc (the node's runtime), the CNI plugins, iptables and conntrack (kube-proxy),
# docker.io (dockerd and its BuildKit client, for image builds) and debootstrap (the local Debian base).
# Installs what is missing with apt-get (root only); with everything installed it changes nothing.
set -euo pipefail

packages=(docker.io containerd runc containernetworking-plugins debootstrap iptables conntrack)
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
    echo "cluster packages: installed (${packages[*]})"
    exit 0
fi
command -v apt-get >/dev/null || {
    echo "install-packages.sh: the cluster tier needs Debian packages (${missing[*]}) and this machine has no apt-get" >&2
    exit 1
}
if [[ $(id -u) != 0 ]]; then
    echo "install-packages.sh: the cluster tier needs ${missing[*]}; as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
start=$SECONDS
echo "==> installing ${missing[*]} (apt-get)"
apt-get update -qq
# No daemon is started: Debian's package scripts need systemd or invoke-rc.d, and the harness starts
# containerd and dockerd itself.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "==> installed in $((SECONDS - start)) s"
