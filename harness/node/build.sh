#!/usr/bin/env bash
# Build the binaries of the cluster tier's node once into $EBB_CACHE/node/<pin>/bin: kubelet,
# kube-controller-manager, kube-scheduler and kube-proxy from the control plane's wrapper module (same
# Kubernetes pin), CoreDNS, local-path-provisioner, the Spark operator and promtool from the Go module
# proxy, and pause from Kubernetes' pause.c. Each binary is cached on its own, so an interrupted build
# resumes where it stopped; a complete set is marked with bin/.complete.
#
# Environment: EBB_CACHE (default ~/.cache/ebb), EBB_GO_JOBS (parallel compile jobs, default 2).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
k8s="$here/../k8s"
# shellcheck source=../k8s/versions.env
source "$k8s/versions.env"
# shellcheck source=versions.env
source "$here/versions.env"
cache=${EBB_CACHE:-$HOME/.cache/ebb}
jobs=${EBB_GO_JOBS:-2}
pin="${KUBERNETES_VERSION#v}-coredns${COREDNS_VERSION#v}-lpp${LOCAL_PATH_VERSION#v}-so${SPARK_OPERATOR_VERSION#v}-prom${PROMTOOL_VERSION#v}-pause${PAUSE_VERSION}"
bin="$cache/node/$pin/bin"
if [[ -f "$bin/.complete" ]]; then
    echo "node $pin: using the cached binaries in $bin"
    exit 0
fi
command -v go >/dev/null || { echo "node/build.sh: Go is required (none on PATH)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "node/build.sh: gcc is required (kubelet uses cgo, pause is C)" >&2; exit 1; }

mkdir -p "$bin"
exec 9>"$cache/node/.lock"
flock 9
start=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }
step() { echo "==> [node $(elapsed)] $*"; }

minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean"
done

build_k8s() {  # cgo name...
    local cgo=$1 missing=() name
    shift
    for name in "$@"; do [[ -x "$bin/$name" ]] || missing+=("k8s.io/kubernetes/cmd/$name"); done
    ((${#missing[@]})) || return 0
    step "compiling ${missing[*]##*/} ${KUBERNETES_VERSION} (cold: 5-10 minutes each on 2 cores)"
    local out
    out=$(mktemp -d "$cache/node/.build.XXXXXX")
    (cd "$k8s" && CGO_ENABLED=$cgo go build -p "$jobs" -trimpath -ldflags "$ld" -o "$out/" "${missing[@]}")
    mv "$out"/* "$bin/" && rmdir "$out"
}
# kubelet is not among upstream's static binaries (hack/lib/golang.sh): it is built with cgo.
build_k8s 1 kubelet
build_k8s 0 kube-controller-manager kube-scheduler kube-proxy

go_install() {  # binary module@version [ldflags]
    [[ -x "$bin/$1" ]] && return 0
    step "compiling $1 ($2 from the Go module proxy)"
    (cd "$bin" && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -p "$jobs" -trimpath \
        -ldflags "-s -w ${3:-}" "$2")
}
go_install coredns "github.com/coredns/coredns@$COREDNS_VERSION"
go_install local-path-provisioner "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"
go_install promtool "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" \
    "-X github.com/prometheus/common/version.Version=${PROMTOOL_VERSION#v0.}"

if [[ ! -x "$bin/spark-operator" ]]; then
    # Its go.mod has replace directives (k8s.io/* => v0.32.x), which `go install mod@version` refuses:
    # build from a writable copy of the downloaded module instead.
    step "compiling spark-operator ${SPARK_OPERATOR_VERSION} (from a copy of its downloaded module)"
    dir=$(go mod download -json "github.com/kubeflow/spark-operator/v2@$SPARK_OPERATOR_VERSION" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    work=$(mktemp -d "$cache/node/.spark-operator.XXXXXX")
    cp -r "$dir/." "$work/" && chmod -R u+w "$work"
    (cd "$work" && CGO_ENABLED=0 go build -p "$jobs" -trimpath \
        -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$SPARK_OPERATOR_VERSION" \
        -o "$bin/spark-operator" ./cmd/operator)
    mkdir -p "$bin/../spark-operator-crds"
    cp "$work"/config/crd/bases/sparkoperator.k8s.io_*.yaml "$bin/../spark-operator-crds/"
    rm -rf "$work"
fi

if [[ ! -x "$bin/pause" ]]; then
    step "compiling pause ${PAUSE_VERSION} from Kubernetes' build/pause/linux/pause.c"
    kdir=$(cd "$k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION" -o "$bin/pause" "$kdir/build/pause/linux/pause.c"
    strip "$bin/pause"
fi

touch "$bin/.complete"
step "done: $(ls "$bin" | tr '\n' ' ')"
