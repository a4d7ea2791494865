#!/usr/bin/env bash
# Compiles the conformance harness for each Flink version into
# ${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}/<version>/classes (fetching the jars first), and
# prints the command that starts it. Skips a version whose classes were built from the same
# sources, jars and javac (a stamp holds their hash).
#
#   tests/flink/build.sh            # all three versions
#   tests/flink/build.sh 2.3        # one
#   tests/flink/run.sh 2.3          # then: start the harness (JSON lines on stdin/stdout)
#
# Installs openjdk-17-jdk-headless with apt-get when javac is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}"

die() {
    echo "build.sh: error: $*" >&2
    exit 1
}

ensure_jdk() {
    if command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then
        return 0
    fi
    echo "build.sh: javac not found; installing openjdk-17-jdk-headless" >&2
    command -v apt-get >/dev/null 2>&1 || die "no javac and no apt-get: install a JDK (17 is tested) and put javac on PATH"
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "no javac, not root and no sudo: install openjdk-17-jdk-headless"
        sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless
    command -v javac >/dev/null 2>&1 || die "apt-get installed openjdk-17-jdk-headless but javac is still not on PATH"
}

canonical() {
    case "$1" in
        1.11 | 1.11.4) echo 1.11.4 ;;
        1.20 | 1.20.0) echo 1.20.0 ;;
        2.3 | 2.3.0) echo 2.3.0 ;;
        *) return 1 ;;
    esac
}

# The source folders of each version: the shared protocol layer, its API generation, its shims.
source_dirs() {
    case "$1" in
        1.11.4) echo "common gen1" ;;
        1.20.0) echo "common gen2 v1_20" ;;
        2.3.0) echo "common gen2 v2_3" ;;
    esac
}

VERSIONS=()
if [ $# -eq 0 ]; then
    VERSIONS=(1.11.4 1.20.0 2.3.0)
else
    for a in "$@"; do
        v=$(canonical "$a") || die "unknown Flink version '$a' (known: 1.11.4 1.20.0 2.3.0)"
        VERSIONS+=("$v")
    done
fi

ensure_jdk
"$HERE/fetch.sh" "${VERSIONS[@]}"

JAVAC_VERSION="$(javac -version 2>&1)"
for v in "${VERSIONS[@]}"; do
    lib="$CACHE/$v/lib"
    out="$CACHE/$v/classes"
    srcs=()
    for d in $(source_dirs "$v"); do
        while IFS= read -r f; do srcs+=("$f"); done < <(find "$HERE/src/$d" -name '*.java' | LC_ALL=C sort)
    done
    hash=$(
        {
            echo "$JAVAC_VERSION"
            for f in "${srcs[@]}" "$HERE/src/log4j2-harness.properties"; do
                echo "${f#"$HERE"/}"
                cat "$f"
            done
            cat "$lib/.fetched"
            (cd "$lib" && ls -l --time-style=+%s -- *.jar)
        } | sha256sum | cut -d' ' -f1
    )
    if [ -f "$out/.built" ] && [ "$(cat "$out/.built")" = "$hash" ]; then
        echo "build.sh: $v: up to date ($out)"
        continue
    fi
    echo "build.sh: $v: compiling ${#srcs[@]} sources ..."
    tmp="$CACHE/$v/classes.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    t0=$SECONDS
    if ! javac -nowarn -encoding UTF-8 -Xlint:none -d "$tmp" -cp "$lib/*" "${srcs[@]}" 2> >(grep -v '^Note:' >&2); then
        rm -rf "$tmp"
        die "$v: javac failed"
    fi
    cp "$HERE/src/log4j2-harness.properties" "$tmp/"
    rm -rf "$out"
    mv "$tmp" "$out"
    echo "$hash" >"$out/.built"
    echo "build.sh: $v: compiled in $((SECONDS - t0)) s -> $out"
done

echo
echo "Start a harness (JSON lines on stdin, responses on stdout, Flink's log on stderr):"
for v in "${VERSIONS[@]}"; do
    echo "  $HERE/run.sh $v"
done
echo "which runs:"
"$HERE/run.sh" --print "${VERSIONS[0]}"
