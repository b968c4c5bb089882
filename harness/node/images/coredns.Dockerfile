# CoreDNS (kubeadm's version for this Kubernetes release), built by harness/node/build.sh. The binary
# has no capability to bind port 53: it listens on 1053 and the kube-dns Service maps 53 to it.
FROM scratch
COPY coredns /coredns
USER 65532:65532
EXPOSE 1053 1053/udp
ENTRYPOINT ["/coredns"]
