# Delivery: the chart's copy of the CRDs, the images, publishing to a registry, the release workflow's
# linter, and the kind quick start (needs Docker and kind).
.PHONY: chart-crds images base-images kind-up kind-down actionlint

# actionlint checks .github/workflows (tests/unit/delivery/test_release_workflow.py runs it); built once from
# the Go module proxy into $(EBB_CACHE)/tools.
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := $(EBB_CACHE)/tools/actionlint-$(ACTIONLINT_VERSION)/actionlint
TEST_PREREQS += actionlint

actionlint: $(ACTIONLINT)
	@$(ACTIONLINT) -no-color && echo "actionlint $(ACTIONLINT_VERSION): .github/workflows clean"

$(ACTIONLINT):
	@echo "==> building actionlint $(ACTIONLINT_VERSION) (go install, about a minute)"
	@mkdir -p $(dir $@)
	@GOBIN=$(dir $@) CGO_ENABLED=0 go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

IMAGE_TAG    ?= $(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/ebb/Chart.yaml)
KIND_CLUSTER ?= ebb
KIND_NS      ?= ebb

# Helm reads files only inside the chart: charts/ebb/files/crds/ is a copy of crds/ (a unit test fails
# when it is stale). Run after `make crds`.
chart-crds:
	@echo "==> copying crds/*.yaml into charts/ebb/files/crds/"
	@rm -f charts/ebb/files/crds/*.yaml && cp crds/*.yaml charts/ebb/files/crds/

# ebb-operator:$(IMAGE_TAG) and ebb-broker:$(IMAGE_TAG) with BuildKit (harness/images.py): on the
# Dockerfiles' public bases, or, where those cannot be pulled, on local Debian bases (base-images).
# IMAGE_BASES=public|local forces one. Uses the running Docker engine; as root with Debian's docker.io
# and none running, it starts a private dockerd for the build and stops it afterwards. A CA bundle named
# by PIP_CERT / SSL_CERT_FILE (a TLS-intercepting proxy's) is handed to pip as a build secret.
IMAGE_BASES ?= auto
images: venv
	@$(PY) -m harness.images images --tag $(IMAGE_TAG) --bases $(IMAGE_BASES)

# The local bases: localhost/ebb-debian:bookworm (debootstrap minbase + docker import),
# localhost/ebb-python:bookworm and localhost/ebb-jre:bookworm (base-images/*.Dockerfile).
base-images: venv
	@$(PY) -m harness.images bases

# A kind cluster (kind-config.yaml) with the images loaded, the chart installed and the examples applied.
kind-up: images
	@for tool in kind helm kubectl; do command -v $$tool >/dev/null 2>&1 || { echo "kind-up needs $$tool on PATH" >&2; exit 1; }; done
	@if kind get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)'; then \
	  echo "==> kind cluster $(KIND_CLUSTER) exists, reusing it"; \
	else \
	  echo "==> creating kind cluster $(KIND_CLUSTER) (one control plane, two workers)"; \
	  kind create cluster --name $(KIND_CLUSTER) --config kind-config.yaml; \
	fi
	@echo "==> loading the images into the cluster's nodes"
	kind load docker-image --name $(KIND_CLUSTER) ebb-operator:$(IMAGE_TAG) ebb-broker:$(IMAGE_TAG)
	@echo "==> installing the chart (release ebb, namespace $(KIND_NS)); the broker's NodePort 30092 is localhost:9092"
	helm upgrade --install ebb charts/ebb --namespace $(KIND_NS) --create-namespace \
	  --set broker.service.type=NodePort --set broker.service.nodePort=30092 --wait --timeout 5m
	@echo "==> producing a few records to topic orders (from inside the broker pod)"
	kubectl -n $(KIND_NS) exec ebb-broker-0 -- python -c "$$KIND_PRODUCE"
	@echo "==> applying examples/"
	kubectl -n $(KIND_NS) apply -f examples/
	kubectl -n $(KIND_NS) get ebb
	@echo "==> done. 'kubectl -n $(KIND_NS) get ebb' shows every Ebb object; 'make kind-down' deletes the cluster"

kind-down:
	kind delete cluster --name $(KIND_CLUSTER)

# Runs inside the broker pod, whose image has kafka-python (the broker's protocol codec).
define KIND_PRODUCE
import os, ssl
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError
# The chart's broker speaks SASL_SSL by default: the admin's password and the broker's certificate are in
# this container's environment (trusted as it is: the pod talks to itself).
sec = {}
if "ADMIN_PASSWORD" in os.environ:
    ctx = ssl.create_default_context(cadata=os.environ["TLS_CERT"])
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    sec = dict(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
               sasl_plain_password=os.environ["ADMIN_PASSWORD"], ssl_context=ctx)
admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:9092", **sec)
try:
    admin.create_topics([NewTopic("orders", 3, 1)])
except TopicAlreadyExistsError:
    pass
producer = KafkaProducer(bootstrap_servers="127.0.0.1:9092", **sec)
for i in range(300):
    producer.send("orders", value=b"order-%d" % i, partition=i % 3)
producer.flush()
print("produced 300 records to orders")
endef
export KIND_PRODUCE

# Both images and the chart into an OCI registry (harness/publish.py): `make images`, `docker push` of each
# image (its digest kept), the chart with that registry and those digests in its values, `helm push` to
# oci://REGISTRY/charts. The record: dist/publish.json and dist/values-images.yaml. REGISTRY=host[:port]/path;
# PLAIN_HTTP=1 for a registry without TLS; VERSION defaults to the chart's appVersion. Logins are Docker's
# and Helm's own (`docker login`, `helm registry login`).
REGISTRY ?=
VERSION  ?= $(IMAGE_TAG)
.PHONY: publish
publish: images
	@test -n "$(REGISTRY)" || { echo "usage: make publish REGISTRY=host[:port]/path [VERSION=...] [PLAIN_HTTP=1]" >&2; exit 2; }
	@command -v helm >/dev/null 2>&1 || { echo "make publish needs helm on PATH" >&2; exit 1; }
	@$(PY) -m harness.publish --registry $(REGISTRY) --version $(VERSION) \
	  --operator-image ebb-operator:$(IMAGE_TAG) --broker-image ebb-broker:$(IMAGE_TAG) $(if $(PLAIN_HTTP),--plain-http)
