# rancher/local-path-provisioner (kind's storage provisioner), built by harness/node/build.sh, on the
# local Debian base (its helper pods use the same base for mkdir/rm).
ARG DEBIAN_IMAGE=localhost/ebb-debian:bookworm
FROM ${DEBIAN_IMAGE}
COPY local-path-provisioner /usr/bin/local-path-provisioner
ENTRYPOINT ["/usr/bin/local-path-provisioner"]
