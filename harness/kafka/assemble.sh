#!/usr/bin/env bash
# Assemble Apache Kafka (broker + CLI tools) from Maven Central into $EBB_CACHE/kafka/<version>/libs.
# The version is the pin in pom.xml; the directory is rebuilt only when pom.xml changes (hash stamp), so a
# fresh clone on this machine reuses it and a fresh machine builds it once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${EBB_CACHE:-$HOME/.cache/ebb}"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
dest="$cache/kafka/$version"
stamp="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

# Several clones on one machine share the cache: one assembly at a time, the others then find it done.
mkdir -p "$cache/kafka"
exec 9>"$cache/kafka/.assemble.lock"
flock 9

if [[ -f "$dest/libs/.assembled" && "$(cat "$dest/libs/.assembled")" == "$stamp" ]]; then
    echo "==> Apache Kafka $version is assembled in $dest/libs"
    exit 0
fi

command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) is required to assemble Apache Kafka" >&2; exit 1; }
command -v java >/dev/null || { echo "error: java (17+) is required to run Apache Kafka" >&2; exit 1; }

echo "==> assembling Apache Kafka $version from Maven Central into $dest/libs (first run downloads ~100 MB)"
rm -rf "$dest/libs.tmp"
mkdir -p "$dest"
# Batch mode prints one line per downloaded artifact: that is the progress report.
mvn -B -Dstyle.color=never -f "$here/pom.xml" -Dmaven.repo.local="$cache/maven-repo" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dest/libs.tmp" \
    | grep -E '^\[INFO\] (Downloaded from|BUILD)|ERROR' || true
# grep hides Maven's chatter; the jar count decides success.
count="$(find "$dest/libs.tmp" -name '*.jar' 2>/dev/null | wc -l)"
if [[ "$count" -lt 20 || ! -f "$dest/libs.tmp/kafka_2.13-$version.jar" ]]; then
    echo "error: Maven did not resolve Apache Kafka $version (got $count jars)" >&2
    exit 1
fi
echo "$stamp" > "$dest/libs.tmp/.assembled"
rm -rf "$dest/libs"
mv "$dest/libs.tmp" "$dest/libs"
echo "==> Apache Kafka $version: $count jars in $dest/libs"
