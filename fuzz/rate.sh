#!/usr/bin/env bash
# Executions per second of fuzz targets as users run them: the binary that
# `cargo fuzz run [--sanitizer none] TARGET` builds, run for SECONDS from a
# scratch copy of the committed corpus (so the seeds stay as they are), one
# process, no flags but -max_total_time, -print_final_stats and
# -artifact_prefix (and CKPT_FUZZ_FLAGS when set) (what
# `cargo fuzz run TARGET fuzz/corpus/TARGET -- -max_total_time=60` does).
#
# Usage: bash fuzz/rate.sh SANITIZER [SECONDS] [TARGET...]
#   SANITIZER  none or address
#   SECONDS    default 60
#   TARGET     default: coordinator_events task_events system_events
# Env: CKPT_FUZZ_BIN_DIR  run the binaries in this directory instead of
#      building (e.g. a copy of an older build, for before/after figures).
#      CKPT_FUZZ_FLAGS    extra libFuzzer flags (for experiments).
#      CKPT_FUZZ_BUILD_FLAGS  extra `cargo fuzz build` flags (e.g. --dev);
#                         built into their own target dir.
# Prints one Markdown table row per target: date, target, sanitizer,
# extra flags, executions, exec/s, edges and features at the end,
# crashes (reproducers in fuzz/artifacts/TARGET/), load average before the
# run. libFuzzer's output: fuzz/logs/rate-TARGET-SANITIZER-TIME.log.
set -euo pipefail

sanitizer="${1:?usage: bash fuzz/rate.sh none|address [SECONDS] [TARGET...]}"
secs="${2:-60}"
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(coordinator_events task_events system_events)
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
triple="$(rustc -vV | sed -n 's/^host: //p')"
if [ -z "${CKPT_FUZZ_BIN_DIR:-}" ]; then
    # shellcheck source=fuzz/nightly.sh
    source "$here/nightly.sh"
    # shellcheck disable=SC2206
    build=(${CKPT_FUZZ_BUILD_FLAGS:-})
    tdir="target-rate-$sanitizer"
    if [ ${#build[@]} -gt 0 ]; then
        tdir="$tdir$(printf '%s' "${build[*]}" | tr -c 'a-z0-9' '-')"
    fi
    for t in "${targets[@]}"; do
        cargo "${toolchain[@]}" fuzz build --sanitizer "$sanitizer" "${build[@]}" --target-dir "$tdir" "$t" >/dev/null
    done
    # cargo-fuzz puts a --dev (-D) build in debug/, any other in release/.
    profile=release
    for f in "${build[@]}"; do
        case "$f" in
            --dev | -D) profile=debug ;;
        esac
    done
    bin_dir="$tdir/$triple/$profile"
else
    bin_dir="$CKPT_FUZZ_BIN_DIR"
fi
for t in "${targets[@]}"; do
    if [ ! -f "$bin_dir/$t" ] || [ ! -x "$bin_dir/$t" ]; then
        echo "rate.sh: no fuzz binary $bin_dir/$t (not an executable file)" >&2
        exit 1
    fi
done
mkdir -p logs
# shellcheck disable=SC2206
extra=(${CKPT_FUZZ_FLAGS:-})
shown="$(echo "${CKPT_FUZZ_BUILD_FLAGS:-} ${extra[*]:-}" | xargs)"
for t in "${targets[@]}"; do
    scratch="$(mktemp -d)"
    mkdir -p "artifacts/$t"
    cp "corpus/$t"/* "$scratch/"
    load="$(cut -d' ' -f1 /proc/loadavg)"
    when="$(date -u +%Y-%m-%dT%H:%MZ)"
    log="logs/rate-$t-$sanitizer-$(date -u +%H%M%S)-$$.log"
    "$bin_dir/$t" "${extra[@]}" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" "$scratch" >"$log" 2>&1 || true
    runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo '?')
    ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo '?')
    crash=$(grep -c 'Test unit written to' "$log" || true)
    echo "| $when | \`$t\` | $sanitizer | $shown | $runs | $((runs / secs)) | $cov | $ft | $crash | $load |"
    rm -rf "$scratch"
done
