#!/usr/bin/env bash
# Downloads the Flink jars the conformance harness runs against (from PyPI, with plain
# `pip download`), checks each artifact against its pinned sha256 and extracts only the jars the
# harness needs into ${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}/<version>/lib.
#
#   tests/flink/fetch.sh            # all three versions
#   tests/flink/fetch.sh 1.20.0     # one (also accepts 1.11, 1.20, 2.3)
#
# Idempotent: a version whose lib folder carries a stamp for the pinned artifact is skipped
# without touching the network. Downloaded artifacts are deleted after extraction unless
# CKPT_FLINK_KEEP_DOWNLOADS=1. Exit status: 0 ok, 2 usage, 3 checksum mismatch, 4 missing tool,
# 5 download or extraction failed.
set -euo pipefail

CACHE="${CKPT_FLINK_CACHE:-$HOME/.cache/ckpt-flink}"

die() {
    local code=$1
    shift
    echo "fetch.sh: error: $*" >&2
    exit "$code"
}

# version | pip requirement | artifact file | sha256 | archive kind | path of lib/ inside the archive
spec() {
    case "$1" in
        1.11.4) echo "apache-flink==1.11.4|apache-flink-1.11.4.tar.gz|1f45b9440e904de081669a76d8fda5169814f59caa8f532e891024bf20824441|tgz|apache-flink-1.11.4/deps/lib" ;;
        1.20.0) echo "apache-flink-libraries==1.20.0|apache-flink-libraries-1.20.0.tar.gz|808b381151c51d988c8fe5b5ae59d944d6e61d8193ee6832064f7ca14c88a583|tgz|apache-flink-libraries-1.20.0/deps/lib" ;;
        2.3.0) echo "apache-flink-libraries==2.3.0|apache_flink_libraries-2.3.0-py2.py3-none-any.whl|38ece876553286b3a285cf344c2d2038f8a7ca10da5df54d5107250386d64151|whl|pyflink/lib" ;;
        *) return 1 ;;
    esac
}

canonical() {
    case "$1" in
        1.11 | 1.11.4) echo 1.11.4 ;;
        1.20 | 1.20.0) echo 1.20.0 ;;
        2.3 | 2.3.0) echo 2.3.0 ;;
        *) return 1 ;;
    esac
}

# The jars the harness needs: the distribution (runtime, shaded Jackson, slf4j) and log4j 2.
JAR_PATTERNS=("flink-dist*.jar" "log4j-api-*.jar" "log4j-core-*.jar" "log4j-slf4j-impl-*.jar" "log4j-1.2-api-*.jar")

PIP=()
find_pip() {
    if [ ${#PIP[@]} -gt 0 ]; then return 0; fi
    if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
        PIP=(python3 -m pip)
    elif command -v pip3 >/dev/null 2>&1; then
        PIP=(pip3)
    elif command -v pip >/dev/null 2>&1; then
        PIP=(pip)
    else
        die 4 "pip is needed to download Flink's jars from PyPI (install python3-pip)"
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die 4 "sha256sum (coreutils) or shasum is needed to check the downloads"
    fi
}

fetch_one() {
    local v=$1
    local line req file sha kind inner
    line=$(spec "$v")
    IFS='|' read -r req file sha kind inner <<<"$line"
    local dest="$CACHE/$v/lib"
    local stamp="$dest/.fetched"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ] && ls "$dest"/flink-dist*.jar >/dev/null 2>&1; then
        echo "fetch.sh: $v: cached in $dest"
        return 0
    fi
    case "$kind" in
        whl) command -v unzip >/dev/null 2>&1 || die 4 "unzip is needed to unpack the $v wheel (apt-get install unzip)" ;;
        tgz) command -v tar >/dev/null 2>&1 || die 4 "tar is needed to unpack the $v sdist" ;;
    esac
    local dl="$CACHE/downloads/$v"
    mkdir -p "$dl"
    local art="$dl/$file"
    if [ -f "$art" ] && [ "$(sha256_of "$art")" = "$sha" ]; then
        echo "fetch.sh: $v: reusing $art"
    else
        rm -f "$art"
        find_pip
        echo "fetch.sh: $v: pip download $req (200-330 MB) ..."
        local t0=$SECONDS
        if ! "${PIP[@]}" download --no-deps --disable-pip-version-check -q -d "$dl" "$req"; then
            die 5 "$v: 'pip download --no-deps $req' failed (network, index, or pip error above)"
        fi
        [ -f "$art" ] || die 5 "$v: pip downloaded something, but not $file: $(ls "$dl")"
        echo "fetch.sh: $v: downloaded in $((SECONDS - t0)) s"
    fi
    local got
    got=$(sha256_of "$art")
    if [ "$got" != "$sha" ]; then
        die 3 "$v: sha256 mismatch for $file: expected $sha, got $got (the artifact was left in $dl for inspection)"
    fi
    local tmp="$CACHE/$v/lib.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    local pats=()
    local p
    for p in "${JAR_PATTERNS[@]}"; do pats+=("$inner/$p"); done
    case "$kind" in
        whl)
            if ! unzip -q -j -o "$art" "${pats[@]}" -d "$tmp"; then
                rm -rf "$tmp"
                die 5 "$v: unzip failed on $art"
            fi
            ;;
        tgz)
            local depth
            depth=$(awk -F/ '{print NF}' <<<"$inner")
            if ! tar xzf "$art" -C "$tmp" --wildcards --strip-components="$depth" "${pats[@]}"; then
                rm -rf "$tmp"
                die 5 "$v: tar failed on $art"
            fi
            ;;
    esac
    ls "$tmp"/flink-dist*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die 5 "$v: no flink-dist jar in $art"; }
    rm -rf "$dest"
    mv "$tmp" "$dest"
    echo "$sha" >"$stamp"
    if [ "${CKPT_FLINK_KEEP_DOWNLOADS:-0}" != 1 ]; then
        rm -f "$art"
        rmdir "$dl" 2>/dev/null || true
    fi
    echo "fetch.sh: $v: $(ls "$dest" | tr '\n' ' ')-> $dest"
}

VERSIONS=()
if [ $# -eq 0 ]; then
    VERSIONS=(1.11.4 1.20.0 2.3.0)
else
    for a in "$@"; do
        v=$(canonical "$a") || die 2 "unknown Flink version '$a' (known: 1.11.4 1.20.0 2.3.0)"
        VERSIONS+=("$v")
    done
fi

mkdir -p "$CACHE"
for v in "${VERSIONS[@]}"; do
    fetch_one "$v"
done
