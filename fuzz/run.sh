#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds each (default 20), one at a time.
# Usage: bash fuzz/run.sh [SECONDS]
# Exits non-zero if any target finds a crash (artifacts in fuzz/artifacts/<target>/).
set -euo pipefail

secs="${1:-20}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
    sanitizer=()
else
    toolchain=()
    sanitizer=(--sanitizer none)
fi

targets=(coordinator_events task_events system_events trace_decode)
status=0
for t in "${targets[@]}"; do
    work="corpus-work/$t"
    mkdir -p "$work" "corpus/$t"
    echo "== fuzzing $t for ${secs}s =="
    # New inputs go to the scratch directory; the committed seeds are read only.
    # Story targets: 256 actions need up to ~1.8 KiB, so allow 4 KiB at once
    # (len_control would otherwise grow inputs slowly from small ones).
    case "$t" in
        trace_decode) len=() ;;
        *) len=(-max_len=4096 -len_control=0) ;;
    esac
    # --no-trace-compares: see long.sh (twice the executions and more
    # coverage in the same time, measured on every target).
    if ! cargo "${toolchain[@]}" fuzz run "${sanitizer[@]}" --no-trace-compares "$t" "$work" "corpus/$t" -- \
        -max_total_time="$secs" "${len[@]}" -print_final_stats=1; then
        echo "!! $t found a crash (see fuzz/artifacts/$t/)" >&2
        status=1
    fi
done
exit "$status"
