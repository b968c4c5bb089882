# Python 3.11 from Debian bookworm's packages: the PYTHON_IMAGE of operator/Dockerfile and
# broker-image/Dockerfile on machines that cannot pull python:3.11.14-slim-bookworm (`make base-images`).
# DEBIAN_IMAGE is a debootstrap minbase of bookworm, imported with `docker import`.
ARG DEBIAN_IMAGE=localhost/ebb-debian:bookworm
FROM ${DEBIAN_IMAGE}
# The packages of the Debian release debootstrap fetched (unpinned: the base is rebuilt with it).
# hadolint ignore=DL3008
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-venv tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && python3 -c "import sys, venv; assert sys.version_info[:2] == (3, 11), sys.version"
