#!/usr/bin/env bash
# Long fuzzing run (hours; not part of CI): each story target in turn with
# libFuzzer's fork mode over the cores, then the work corpus merged
# (minimized) so the next run starts from the coverage reached.
#
# Usage: fuzz/long.sh [HOURS_PER_TARGET] [FORKS] [TARGET...]
#   HOURS_PER_TARGET  default 4
#   FORKS             libFuzzer -fork=N worker processes (default 2: the
#                     machine's cores; use 1 on a shared machine)
#   TARGET            default: system_events coordinator_events task_events trace_decode
#
# Stories of 256 actions need about 1.3-1.8 KiB of input (5-7 bytes per
# action), so the story targets run with -max_len=4096 and -len_control=0
# (libFuzzer would otherwise grow inputs slowly from small ones).
# Sanitizer: CKPT_FUZZ_SANITIZER=none (default; ckpt forbids unsafe code)
# or address (cargo-fuzz's default, a few times slower per execution).
# Built as `cargo fuzz run` builds by default: optimized, with debug
# assertions (the task reducer's check that a refused event changed
# nothing is one; `--release` would drop it).
#
# CKPT_FUZZ_FLAGS: extra libFuzzer flags for the run (not the merge), e.g.
# -ignore_crashes=1 to go on past a crash (each one still saved).
#
# Several runs at once (say one per sanitizer): give each its own
# CKPT_FUZZ_WORK (the work corpus directory, default corpus-work) and,
# when their sanitizers differ, its own CKPT_FUZZ_TARGET_DIR (cargo's
# target directory, default cargo-fuzz's), so that neither merges over
# the other's corpus nor rebuilds the other's binaries.
#
# Output: fuzz/corpus-work/TARGET (merged corpus, git-ignored),
# fuzz/logs/TARGET-SANITIZER-DATE.log (DATE a UTC stamp such as
# 20261204T0230Z; libFuzzer's status lines: executions and the
# coverage curve, `cov:` against `#executions`), crashes in
# fuzz/artifacts/TARGET/. Exits non-zero if any target crashed.
set -euo pipefail

hours="${1:-4}"
forks="${2:-2}"
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(system_events coordinator_events task_events trace_decode)
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
sanitizer="${CKPT_FUZZ_SANITIZER:-none}"
work_root="${CKPT_FUZZ_WORK:-corpus-work}"
# shellcheck disable=SC2206
extra=(${CKPT_FUZZ_FLAGS:-})
tdir=()
if [ -n "${CKPT_FUZZ_TARGET_DIR:-}" ]; then
    tdir=(--target-dir "$CKPT_FUZZ_TARGET_DIR")
fi
# shellcheck source=fuzz/nightly.sh
source "$here/nightly.sh"

secs=$(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }')
stamp="$(date -u +%Y%m%dT%H%MZ)"
mkdir -p logs
status=0
for t in "${targets[@]}"; do
    work="$work_root/$t"
    mkdir -p "$work" "corpus/$t" "artifacts/$t"
    case "$t" in
        trace_decode) len=(-max_len=65536) ;;
        *) len=(-max_len=4096 -len_control=0) ;;
    esac
    log="logs/$t-$sanitizer-$stamp.log"
    echo "== $t: ${hours} h, -fork=$forks, sanitizer $sanitizer, log $log =="
    crashed=0
    # The comparison hooks are compiled in but not called (the gate in
    # fuzz/Cargo.toml's release profile; --no-trace-compares would build no
    # coverage at all with it, which fuzz/build.rs refuses). libFuzzer's
    # comparison tracing was half of every
    # execution's instructions in system_events (callgrind), and it buys
    # little where `arbitrary` turns almost any bytes into a valid story.
    # Measured 2026-12-01, each pair side by side from the same seeds, same
    # time: executions x2.0 (system), x2.1 (task), x1.2 (trace_decode), and
    # more edges covered by the end in each (system 4,073 vs 3,700; task
    # 1,288 vs 1,190; trace_decode 4,413 vs 4,384); coordinator_events
    # without it found a lost-state bug in 38 s that the run with it had not
    # found in 90 (tests/STRENGTH-2026-12-01.md, "Under libFuzzer").
    cargo "${toolchain[@]}" fuzz run --sanitizer "$sanitizer" "${tdir[@]}" "$t" "$work" "corpus/$t" -- \
        -fork="$forks" -max_total_time="$secs" "${len[@]}" "${extra[@]}" \
        -print_final_stats=1 >"$log" 2>&1 || crashed=1
    tail -n 3 "$log"
    # Executions reached: the run's last status line (`#N: cov: ...` under
    # -fork), read before the merge below appends its own `#N` lines.
    last=$(grep -oE '^#[0-9]+' "$log" | tail -1 || true)
    if [ "$crashed" = 1 ] || grep -qE 'panicked|deadly signal|crash-' "$log"; then
        echo "!! $t crashed (see $log and artifacts/$t/)" >&2
        status=1
    fi
    # Merge: keep only the inputs that add coverage.
    merged="$work_root/$t.merged"
    rm -rf "$merged" && mkdir -p "$merged"
    cargo "${toolchain[@]}" fuzz run --sanitizer "$sanitizer" "${tdir[@]}" "$t" "$merged" "$work" -- \
        -merge=1 "${len[@]}" >>"$log" 2>&1 || true
    if [ -n "$(ls -A "$merged")" ]; then
        rm -rf "$work" && mv "$merged" "$work"
    fi
    echo "== $t: executions reached ${last#\#}; corpus $(ls "$work" | wc -l) inputs =="
done
exit "$status"
