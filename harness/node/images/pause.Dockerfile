# The pod sandbox image: Kubernetes' own build/pause/linux/pause.c, compiled by harness/node/build.sh
# (as upstream's build/pause/Dockerfile packages it).
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
