#!/usr/bin/env bash
# Recovery time of the two-process pipeline after a kill -9, measured from
# the outside: the time from the kill to the line in which the restarted
# side reports the tasks deployed again (task-manager kill: the new task
# manager's "deployed"; coordinator kill: the surviving task manager's
# second "deployed"). The replacement process is started right after the
# kill, so the figure includes its start, the handshake, the store's
# recovery (coordinator kill) and the task manager's reconnect back-off.
#
#   core/node/scripts/recovery.sh [RUNS]       (default 10; needs a release build:
#   cargo build --release -p ckpt-node)
#
# Prints one line per run and the median and maximum of each kind.
set -euo pipefail
runs=${1:-10}
root=$(cd "$(dirname "$0")/../../.." && pwd)
# Where cargo put it: CARGO_TARGET_DIR when set.
bin="${CARGO_TARGET_DIR:-$root/target}/release/ckpt-node"
[ -x "$bin" ] || { echo "build first: cargo build --release -p ckpt-node" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

now_ms() { date +%s%3N; }
# wait_line FILE PATTERN COUNT: until FILE has COUNT lines matching PATTERN.
wait_line() {
    local deadline=$(( $(now_ms) + 60000 ))
    local n
    while n=$(grep -c -- "$2" "$1" 2>/dev/null || true); [ "${n:-0}" -lt "$3" ]; do
        [ "$(now_ms)" -lt "$deadline" ] || { echo "timeout waiting for '$2' in $1" >&2; exit 1; }
        sleep 0.001
    done
}

one_run() { # KIND RUN
    local kind=$1 run=$2 dir="$work/$1-$2"
    mkdir -p "$dir"
    "$bin" coordinator --dir "$dir" > "$dir/c1" 2>&1 & local c=$!
    wait_line "$dir/c1" "listening on" 1
    local addr; addr=$(grep -o 'listening on [0-9.:]*' "$dir/c1" | awk '{print $3}')
    "$bin" task --dir "$dir" --coordinator "$addr" --records 40000 --rate 10000 > "$dir/t1" 2>&1 & local t=$!
    wait_line "$dir/c1" "committed checkpoint" $(( 5 + run % 7 ))
    local t0 t1
    if [ "$kind" = task ]; then
        kill -9 $t; t0=$(now_ms); wait $t 2>/dev/null || true
        "$bin" task --dir "$dir" --coordinator "$addr" --records 40000 --rate 10000 > "$dir/t2" 2>&1 & t=$!
        wait_line "$dir/t2" "deployed attempts" 1; t1=$(now_ms)
    else
        kill -9 $c; t0=$(now_ms); wait $c 2>/dev/null || true
        "$bin" coordinator --dir "$dir" --listen "$addr" > "$dir/c2" 2>&1 & c=$!
        wait_line "$dir/t1" "deployed attempts" 2; t1=$(now_ms)
    fi
    wait $t || { echo "run $kind $run: the task manager failed:" >&2; tail -5 "$dir"/t* >&2; exit 1; }
    wait $c 2>/dev/null || { echo "run $kind $run: the coordinator failed:" >&2; tail -5 "$dir"/c* >&2; exit 1; }
    grep -q "exactly once" "$dir/t2" "$dir/t1" 2>/dev/null || { echo "run $kind $run: output not verified" >&2; exit 1; }
    echo "$kind $run $(( t1 - t0 ))"
}

for kind in task coordinator; do
    for run in $(seq 1 "$runs"); do one_run "$kind" "$run"; done
done | tee "$work/all"
for kind in task coordinator; do
    grep "^$kind " "$work/all" | awk '{print $3}' | sort -n | awk -v k="$kind" '
        { v[NR] = $1 } END { printf "%s kill: %d runs, median %d ms, max %d ms\n", k, NR, v[int((NR + 1) / 2)], v[NR] }'
done
