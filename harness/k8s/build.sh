#!/usr/bin/env bash
# Build kube-apiserver, kubectl, etcd and helm of the pinned versions (versions.env) from the Go module
# proxy into $EBB_CACHE/k8s/<pin>/bin, once: a second run with the same pin only prints the path.
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at v0.0.0 and maps them with
# replace directives, which Go ignores in a dependency (kubernetes/kubernetes#79384); go.mod here replaces
# each staging module by its published v0.<minor>.<patch> tag. etcd has its own module (etcd/) so that
# Go's minimal version selection cannot bump its dependencies to Kubernetes' versions, nor the reverse:
# both binaries are built against exactly the dependency versions their releases were.
#
# Environment: EBB_CACHE (default ~/.cache/ebb), EBB_GO_JOBS (parallel compile jobs, default 2; use 1 on
# a machine short of memory: linking kube-apiserver takes about 2 GiB).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${EBB_CACHE:-$HOME/.cache/ebb}
jobs=${EBB_GO_JOBS:-2}

pin="${KUBERNETES_VERSION#v}-etcd${ETCD_VERSION#v}-helm${HELM_VERSION#v}"
dest="$cache/k8s/$pin"
if [[ -f "$dest/bin/.complete" ]]; then
    echo "control plane $pin: using the cached binaries in $dest/bin"
    exit 0
fi

command -v go >/dev/null || { echo "build.sh: Go is required to build the control plane (none on PATH)" >&2; exit 1; }

# The pin must agree with what the modules require, or the cache key would lie about its contents.
require_version() {  # dir module expected
    local got
    got=$(cd "$1" && go list -m -f '{{.Version}}' "$2")
    if [[ "$got" != "$3" ]]; then
        echo "build.sh: $1/go.mod requires $2 $got but versions.env pins $3;" \
             "run 'go get -tool' in $1 or fix versions.env" >&2
        exit 1
    fi
}
require_version "$here" k8s.io/kubernetes "$KUBERNETES_VERSION"
require_version "$here/etcd" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"

mkdir -p "$cache/k8s"
# One build at a time per cache (two clones running `make test` at once share it).
exec 9>"$cache/k8s/.lock"
flock 9
if [[ -f "$dest/bin/.complete" ]]; then
    echo "control plane $pin: built meanwhile by another run, in $dest/bin"
    exit 0
fi

out=$(mktemp -d "$cache/k8s/.build-$pin.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
start=$SECONDS

elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }

# `go build -v` names each package as it compiles it: turn that into a count against the total.
progress() {  # label [total]
    local n=0 downloads=0 line of=""
    [[ -n "${2:-}" ]] && of=" of at most $2"
    while IFS= read -r line; do
        if [[ "$line" == "go: downloading "* ]]; then
            downloads=$((downloads + 1))
            if ((downloads % 25 == 1)); then
                echo "    $1: downloading modules from the Go module proxy ($downloads so far, $(elapsed))"
            fi
            continue
        fi
        if [[ "$line" == *" "* || "$line" == *:* ]]; then
            echo "    $line"   # an error or a download message, not a package path: show it as is
            continue
        fi
        n=$((n + 1))
        if ((n % 100 == 0)); then
            echo "    $1: compiled $n$of packages ($(elapsed))"
        fi
    done
    echo "    $1: compiled $n packages, linking done ($(elapsed))"
}

echo "==> building the Kubernetes ${KUBERNETES_VERSION} test control plane into $dest/bin"
echo "    this is long the first time (about 15-30 minutes on 2 cores, ~1 GB of downloads);"
echo "    every later run reuses the binaries until versions.env changes"

echo "==> downloading the Go modules of kube-apiserver and kubectl (Go module proxy)"
(cd "$here" && go mod download)
echo "==> downloading the Go modules of etcd"
(cd "$here/etcd" && go mod download)

minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
# The version ldflags of hack/lib/version.sh: without them /version and `kubectl version` report
# v0.0.0-master+$Format:%H$.
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean"
done

k8s_pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
total=$(cd "$here" && go list -deps "${k8s_pkgs[@]}" | wc -l)
echo "==> compiling kube-apiserver and kubectl ($total packages, -p $jobs)"
# Static, as upstream builds them (KUBE_STATIC_BINARIES in hack/lib/golang.sh).
(cd "$here" && CGO_ENABLED=0 go build -p "$jobs" -trimpath -v -ldflags "$ld" -o "$out/" "${k8s_pkgs[@]}") \
    2>&1 | progress "kube-apiserver+kubectl" "$total"

total=$(cd "$here/etcd" && go list -deps go.etcd.io/etcd/server/v3 | wc -l)
echo "==> compiling etcd ${ETCD_VERSION} ($total packages)"
(cd "$here/etcd" && CGO_ENABLED=0 go build -p "$jobs" -trimpath -v -ldflags "-s -w" -o "$out/etcd" \
    go.etcd.io/etcd/server/v3) 2>&1 | progress etcd "$total"

echo "==> compiling helm ${HELM_VERSION} (go install from the Go module proxy)"
major=${HELM_VERSION%%.*}
(cd "$out" && CGO_ENABLED=0 GOBIN="$out" go install -p "$jobs" -trimpath -v \
    -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$HELM_VERSION \
              -X helm.sh/helm/$major/internal/version.gitTreeState=clean" \
    "helm.sh/helm/$major/cmd/helm@$HELM_VERSION") 2>&1 | progress helm

echo "==> checking the versions the binaries report"
check() {  # what expected command...
    local what=$1 expected=$2 got
    shift 2
    got=$("$@" 2>&1)
    if [[ "$got" != *"$expected"* ]]; then
        echo "build.sh: $what reports '$got', expected it to contain '$expected'" >&2
        exit 1
    fi
    echo "    $what: $(echo "$got" | head -1)"
}
check kube-apiserver "Kubernetes $KUBERNETES_VERSION" "$out/kube-apiserver" --version
check kubectl "$KUBERNETES_VERSION" "$out/kubectl" version --client
check etcd "etcd Version: ${ETCD_VERSION#v}" "$out/etcd" --version
check helm "$HELM_VERSION" "$out/helm" version --template '{{.Version}}'

rm -rf "$dest"
mkdir -p "$dest"
touch "$out/.complete"
mv "$out" "$dest/bin"
trap - EXIT
echo "==> control plane $pin built in $(elapsed): $dest/bin"
