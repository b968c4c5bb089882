#!/usr/bin/env bash
# Build the binaries of the cluster tier's node once into $EBB_CACHE/node/<pin>/bin: kubelet,
# kube-controller-manager, kube-scheduler and kube-proxy from the control plane's wrapper module (same
# Kubernetes pin), CoreDNS, local-path-provisioner, the Spark operator and promtool from the Go module
# proxy, and pause from Kubernetes' pause.c; beside them, the upstream manifests the node applies (the
# Spark operator's CRDs and chart, local-path-provisioner's deployment). Each binary is cached on its own, so an
# interrupted build resumes where it stopped; a complete set is marked with bin/.complete. Beside it, keyed by
# its own pin so that a new version rebuilds nothing else: CNCF Distribution's `registry`, the OCI registry
# the node pulls Ebb's images from, in $EBB_CACHE/registry/<version>/registry.
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
root="$cache/node/$pin"
bin="$root/bin"
complete() {
    [[ -f "$bin/.complete" && -f "$root/local-path-storage.yaml" && -d "$root/spark-operator-crds" \
       && -d "$root/spark-operator-chart" ]]
}
registry_bin="$cache/registry/${REGISTRY_VERSION#v}/registry"
build_registry() {
    if [[ -x "$registry_bin" ]]; then
        echo "registry ${REGISTRY_VERSION}: using $registry_bin"
        return 0
    fi
    command -v go >/dev/null || { echo "node/build.sh: Go is required (none on PATH)" >&2; exit 1; }
    echo "==> compiling registry ${REGISTRY_VERSION} (github.com/distribution/distribution/v3, about 2 minutes)"
    local out
    mkdir -p "$(dirname "$registry_bin")"
    out=$(mktemp -d "$(dirname "$registry_bin")/.build.XXXXXX")
    (cd "$out" && CGO_ENABLED=0 GOBIN="$out" go install -p "$jobs" -trimpath -ldflags "-s -w \
        -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
        "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION")
    mv "$out/registry" "$registry_bin" && rm -rf "$out"
    "$registry_bin" --version
}
if complete; then
    echo "node $pin: using the cached binaries in $bin"
    build_registry
    exit 0
fi
command -v go >/dev/null || { echo "node/build.sh: Go is required (none on PATH)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "node/build.sh: gcc is required (kubelet uses cgo, pause is C)" >&2; exit 1; }

mkdir -p "$bin"
# One build at a time per cache (two clones running `make test` at once share it).
exec 9>"$cache/node/.lock"
flock 9
rm -f "$bin/.complete"
start=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }
step() { echo "==> [node $(elapsed)] $*"; }

echo "==> building the cluster tier's node $pin into $bin"
echo "    this is long the first time (25-40 minutes of CPU on 2 cores); every binary is cached on its own"

# Go's output, shortened: module downloads counted, compiled packages counted (-v), errors as they are.
progress() {  # label
    local line downloads=0 packages=0
    while IFS= read -r line; do
        if [[ "$line" == "go: downloading "* ]]; then
            downloads=$((downloads + 1))
            ((downloads % 50 == 1)) && echo "    $1: downloading modules ($downloads so far, $(elapsed))"
        elif [[ "$line" == *" "* || "$line" == *:* ]]; then
            echo "    $line"
        else
            packages=$((packages + 1))
            ((packages % 200 == 0)) && echo "    $1: compiled $packages packages ($(elapsed))"
        fi
    done
    return 0
}

minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean"
done

build_k8s() {  # cgo name...
    local cgo=$1 missing=() name began=$SECONDS
    shift
    for name in "$@"; do [[ -x "$bin/$name" ]] || missing+=("k8s.io/kubernetes/cmd/$name"); done
    ((${#missing[@]})) || return 0
    step "compiling ${missing[*]##*/} ${KUBERNETES_VERSION} (cold: 5-10 minutes each on 2 cores)"
    local out
    out=$(mktemp -d "$cache/node/.build.XXXXXX")
    (cd "$k8s" && CGO_ENABLED=$cgo go build -p "$jobs" -trimpath -v -ldflags "$ld" -o "$out/" "${missing[@]}") \
        2>&1 | progress "${missing[*]##*/}"
    mv "$out"/* "$bin/" && rmdir "$out"
    step "${missing[*]##*/} built in $((SECONDS - began)) s"
}
# kubelet is not among upstream's static binaries (hack/lib/golang.sh): it is built with cgo.
build_k8s 1 kubelet
build_k8s 0 kube-controller-manager kube-scheduler kube-proxy

go_install() {  # binary module@version [ldflags]
    [[ -x "$bin/$1" ]] && return 0
    local began=$SECONDS out
    step "compiling $1 ($2 from the Go module proxy)"
    out=$(mktemp -d "$cache/node/.build.XXXXXX")
    (cd "$out" && CGO_ENABLED=0 GOBIN="$out" go install -p "$jobs" -trimpath -v -ldflags "-s -w ${3:-}" "$2") \
        2>&1 | progress "$1"
    mv "$out/$1" "$bin/$1" && rm -rf "$out"
    step "$1 built in $((SECONDS - began)) s"
}
go_install coredns "github.com/coredns/coredns@$COREDNS_VERSION"
go_install local-path-provisioner "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"
# Prometheus 3.x is tagged v0.3xx.y in Go (v0.316.0 is 3.16.0): the version promtool reports.
prom=${PROMTOOL_VERSION#v0.}
go_install promtool "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" \
    "-X github.com/prometheus/common/version.Version=${prom:0:1}.${prom:1:2}.${prom#*.}"

if [[ ! -f "$root/local-path-storage.yaml" ]]; then
    dir=$(go mod download -json "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    cp "$dir/deploy/local-path-storage.yaml" "$root/local-path-storage.yaml"
    chmod u+w "$root/local-path-storage.yaml"
fi

if [[ ! -x "$bin/spark-operator" || ! -d "$root/spark-operator-crds" || ! -d "$root/spark-operator-chart" ]]; then
    # Its go.mod has replace directives (k8s.io/* => v0.32.x), which `go install mod@version` refuses:
    # build from a writable copy of the downloaded module instead.
    began=$SECONDS
    step "compiling spark-operator ${SPARK_OPERATOR_VERSION} (from a copy of its downloaded module)"
    dir=$(go mod download -json "github.com/kubeflow/spark-operator/v2@$SPARK_OPERATOR_VERSION" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    work=$(mktemp -d "$cache/node/.spark-operator.XXXXXX")
    cp -r "$dir/." "$work/" && chmod -R u+w "$work"
    if [[ ! -x "$bin/spark-operator" ]]; then
        (cd "$work" && CGO_ENABLED=0 go build -p "$jobs" -trimpath -v \
            -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$SPARK_OPERATOR_VERSION" \
            -o "$bin/spark-operator" ./cmd/operator) 2>&1 | progress spark-operator
    fi
    rm -rf "$root/spark-operator-crds" "$root/spark-operator-chart"
    mkdir -p "$root/spark-operator-crds"
    cp "$work"/config/crd/bases/sparkoperator.k8s.io_*.yaml "$root/spark-operator-crds/"
    # Its chart: the controller's RBAC comes from there (harness/spark_operator.py).
    cp -r "$work/charts/spark-operator-chart" "$root/spark-operator-chart"
    rm -rf "$work"
    step "spark-operator built in $((SECONDS - began)) s"
fi

if [[ ! -x "$bin/pause" ]]; then
    step "compiling pause ${PAUSE_VERSION} from Kubernetes' build/pause/linux/pause.c"
    kdir=$(cd "$k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION" -o "$bin/pause.partial" "$kdir/build/pause/linux/pause.c"
    strip "$bin/pause.partial"
    mv "$bin/pause.partial" "$bin/pause"
fi

step "checking the versions the binaries report"
check() {  # what expected command...
    local what=$1 expected=$2 got
    shift 2
    got=$("$@" 2>&1 || true)
    if [[ "$got" != *"$expected"* ]]; then
        echo "node/build.sh: $what reports '$(echo "$got" | head -3)', expected it to contain '$expected'" >&2
        exit 1
    fi
    echo "    $what: $(echo "$got" | head -1)"
}
for name in kubelet kube-proxy kube-scheduler kube-controller-manager; do
    check "$name" "$KUBERNETES_VERSION" "$bin/$name" --version
done
check coredns "CoreDNS-${COREDNS_VERSION#v}" "$bin/coredns" -version
check promtool "version ${prom:0:1}.${prom:1:2}" "$bin/promtool" --version
check spark-operator "${SPARK_OPERATOR_VERSION}" "$bin/spark-operator" version

touch "$bin/.complete"
step "done: $(ls "$bin" | tr '\n' ' ')"
build_registry
