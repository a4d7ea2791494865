#!/usr/bin/env bash
# Task-side probe: constructs Flink's ChannelStateWriterImpl (1.11 and 1.20) from the main jars
# alone and drives it (start, addInputData/addOutputData, finishInput/finishOutput,
# getAndRemoveWriteResult, abort with and without cleanup, close). Not part of the protocol; it
# answers whether a task-side conformance harness is possible (see FINDINGS.md, "Task side").
#
#   tests/flink/probe.sh            # both versions
#   tests/flink/probe.sh 1.20
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(1.11 1.20)
for a in "${versions[@]}"; do
    case "$a" in
        1.11 | 1.11.4) v=1.11.4 d=probe_v1_11 ;;
        1.20 | 1.20.0) v=1.20.0 d=probe_v1_20 ;;
        *) echo "probe.sh: the probe exists for 1.11 and 1.20 (2.3's writer has 1.20's constructor)" >&2; exit 2 ;;
    esac
    "$HERE/build.sh" "$v" >/dev/null
    out="$CACHE/$v/probe"
    rm -rf "$out"
    mkdir -p "$out"
    javac -nowarn -encoding UTF-8 -d "$out" -cp "$CACHE/$v/lib/*" "$HERE/src/$d/ckpt/flink/ChannelStateProbe.java" 2> >(grep -v '^Note:' >&2)
    java --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
        "-Dlog4j.configurationFile=$CACHE/$v/classes/log4j2-harness.properties" \
        -cp "$out:$CACHE/$v/lib/*" ckpt.flink.ChannelStateProbe
done
