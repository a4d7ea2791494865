#!/usr/bin/env bash
# Runs every cargo-fuzz target for a number of executions (not seconds), one
# at a time, from the committed seeds plus fuzz/corpus-work/.
# Usage: bash fuzz/run.sh [EXECUTIONS]
#   EXECUTIONS  per story target (default 20000); trace_decode, about 50
#               times faster per execution, runs 25 times as many.
# Sized by executions so that a slow or shared machine runs the same amount
# of fuzzing, only slower (CI: .ci/run). Prints each target's executions,
# seconds and coverage; exits non-zero if any target finds a crash
# (artifacts in fuzz/artifacts/<target>/).
set -euo pipefail

runs="${1:-20000}"
case "$runs" in
    ''|*[!0-9]*) echo "usage: bash fuzz/run.sh [EXECUTIONS]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# shellcheck source=fuzz/nightly.sh
source "$here/nightly.sh"

targets=(coordinator_events task_events system_events trace_decode)
mkdir -p logs
status=0
for t in "${targets[@]}"; do
    work="corpus-work/$t"
    mkdir -p "$work" "corpus/$t"
    # Story targets: 256 actions need up to ~1.8 KiB, so allow 4 KiB at once
    # (len_control would otherwise grow inputs slowly from small ones).
    case "$t" in
        trace_decode) len=(); n=$((runs * 25)) ;;
        *) len=(-max_len=4096 -len_control=0); n="$runs" ;;
    esac
    echo "== fuzzing $t for $n executions =="
    log="logs/run-$t.log"
    start=$(date +%s)
    # New inputs go to the scratch directory; the committed seeds are read only.
    # Comparison hooks: compiled in but not called (the gate in
    # fuzz/Cargo.toml's release profile; see long.sh for why). Not
    # --no-trace-compares: with the gate it would build no coverage at all,
    # which fuzz/build.rs refuses.
    # libFuzzer's output goes to fuzz/logs/run-TARGET.log (its status lines
    # are the coverage curve); a crash prints the end of it.
    if ! cargo "${toolchain[@]}" fuzz run "$t" "$work" "corpus/$t" -- \
        -runs="$n" "${len[@]}" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "!! $t found a crash (see fuzz/artifacts/$t/ and fuzz/$log)" >&2
        status=1
    fi
    # A build without coverage counters fuzzes blind and finds nothing:
    # libFuzzer prints how many it loaded at start-up.
    if ! grep -qE 'INFO: Loaded [0-9]+ modules +\([1-9][0-9]* inline 8-bit counters\)' "$log"; then
        echo "!! $t has no coverage counters: the build is not instrumented (fuzz/$log)" >&2
        status=1
    fi
    secs=$(( $(date +%s) - start ))
    done_runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
    cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo 'cov: ?')
    echo "== $t: $done_runs executions in ${secs}s (with the build), $cov =="
done
exit "$status"
