# The cluster tier (tests/cluster, docs/cluster-node.md): the images, a real node started by the harness
# on this machine, the chart installed with helm, the Spark operator running pods. Its prerequisites
# build everything once, with progress, into $(EBB_CACHE): the Debian packages (apt-get), the node's
# binaries (harness/node/build.sh, 25-40 min of CPU cold), the local bases and the images (rebuilt only
# when their inputs change). The tier itself then starts the node in about a minute.
.PHONY: cluster-packages harness-node cluster-images

TEST_PREREQS += cluster-packages harness-node cluster-images

cluster-packages:
	@harness/node/install-packages.sh

harness-node: harness-k8s
	@harness/node/build.sh

cluster-images: venv cluster-packages harness-node
	@$(PY) -m harness.images cluster
