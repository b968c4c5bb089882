# A Java 17 runtime from Debian bookworm's openjdk-17-jre-headless, laid out as Temurin's image lays
# out its JRE: self-contained in /opt/java/openjdk. The JAVA_IMAGE of operator/Dockerfile on machines
# that cannot pull eclipse-temurin (`make base-images`); that Dockerfile copies /opt/java/openjdk out.
# Debian's JRE links its conf/ and security files into /etc, so they are copied in dereferenced.
ARG DEBIAN_IMAGE=localhost/ebb-debian:bookworm
FROM ${DEBIAN_IMAGE}
# hadolint ignore=DL3008
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless \
 && mkdir -p /opt/java \
 && cp -rL "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /opt/java/openjdk \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && /opt/java/openjdk/bin/java -version
