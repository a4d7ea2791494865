#!/usr/bin/env bash
# Starts the conformance harness for one Flink version (built by build.sh): JSON-lines commands
# on stdin, one response line per command on stdout (see PROTOCOL.md), Flink's log on stderr.
#
#   tests/flink/run.sh 1.20 < commands.jsonl
#   tests/flink/run.sh --print 2.3      # print the java command line instead of running it
#
# Environment: CKPT_FLINK_CACHE (cache root), CKPT_FLINK_LOG_LEVEL (Flink's log level on stderr,
# default WARN), CKPT_FLINK_JAVA_OPTS (extra JVM options).
set -euo pipefail

CACHE="${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}"
print=0
if [ "${1:-}" = "--print" ]; then
    print=1
    shift
fi
[ $# -eq 1 ] || { echo "usage: run.sh [--print] 1.11|1.20|2.3" >&2; exit 2; }
case "$1" in
    1.11 | 1.11.4) v=1.11.4 main=ckpt.flink.V1_11 ;;
    1.20 | 1.20.0) v=1.20.0 main=ckpt.flink.V1_20 ;;
    2.3 | 2.3.0) v=2.3.0 main=ckpt.flink.V2_3 ;;
    *) echo "run.sh: unknown Flink version '$1' (known: 1.11.4 1.20.0 2.3.0)" >&2; exit 2 ;;
esac
classes="$CACHE/$v/classes"
lib="$CACHE/$v/lib"
if [ $print = 0 ] && [ ! -f "$classes/.built" ]; then
    echo "run.sh: $v is not built: run tests/flink/build.sh $v" >&2
    exit 2
fi
# Java 17 closes the JDK's internals that Flink's runtime reflects into.
opens=()
for p in java.lang java.lang.reflect java.util java.util.concurrent java.util.concurrent.atomic java.io java.net java.nio java.text java.time sun.nio.ch; do
    opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
cmd=(java "${opens[@]}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto
    "-Dlog4j.configurationFile=$classes/log4j2-harness.properties"
    "-Dckpt.flink.log.level=${CKPT_FLINK_LOG_LEVEL:-WARN}"
    ${CKPT_FLINK_JAVA_OPTS:-}
    -cp "$classes:$lib/*" ckpt.flink.Main "$main")
if [ $print = 1 ]; then
    printf '%q ' "${cmd[@]}"
    echo
    exit 0
fi
exec "${cmd[@]}"
