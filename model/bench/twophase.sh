#!/usr/bin/env bash
# Two-phase commit side by side, one run each: ckpt-model's distributed
# search (`dist --two-phase N`, one worker), stateright's DfsChecker and
# BfsChecker (`dist --two-phase N --stateright dfs|bfs`, each in its own
# process), and SPIN on model/bench/twophase.pml, for N resource managers
# (default 7 8 9). One thread everywhere (SPIN's search is sequential).
# Prints a Markdown table: unique states, wall time, CPU time (user +
# system), states per CPU second, peak RSS (GNU time's maximum resident set
# size). On a shared machine the wall time depends on the load; the CPU
# time much less. A checker whose count is not
# stateright's published one fails the run.
#
#   bash model/bench/twophase.sh            # release build of ckpt-model first
#   bash model/bench/twophase.sh 7          # one size only
#
# Needs: a release build (cargo build --release -p ckpt-model), spin and
# gcc (apt-get install -y spin), GNU time (/usr/bin/time).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${CKPT_MODEL:-$root/target/release/ckpt-model}"
pml="$root/model/bench/twophase.pml"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(7 8 9)

declare -A expect=([3]=288 [5]=8832 [7]=296448 [8]=1745408 [9]=10340352)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "ckpt-model: $bin"
echo "spin: $(spin -V 2>&1 | head -1), gcc: $(gcc -dumpversion)"
echo
echo "| N | checker | unique states | wall s | CPU s | states per CPU s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"

# row N NAME UNIQUE WALL CPU RSS_KB
row() {
    local rate
    rate=$(awk -v u="$3" -v s="$5" 'BEGIN { if (s > 0) printf "%.0f", u / s; else print "-" }')
    printf '| %s | %s | %s | %.2f | %.2f | %s | %.0f |\n' "$1" "$2" "$3" "$4" "$5" "$rate" "$(awk -v k="$6" 'BEGIN { print k / 1024 }')"
}

# usage_of FILE: wall, CPU (user + system) and peak RSS of a timed run.
usage_of() {
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$1.time"
}

# timed FILE CMD...: runs CMD with its stdout in FILE.out, GNU time's in FILE.time.
timed() {
    local f="$1"
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$f.time" "$@" >"$f.out" 2>"$f.err"
}

check_count() {
    if [ "$3" != "${expect[$1]}" ]; then
        echo "error: $2 counted $3 states for N=$1, stateright's is ${expect[$1]}" >&2
        exit 1
    fi
}

for n in "${sizes[@]}"; do
    # ckpt-model's distributed search, one worker.
    timed "$work/dist$n" "$bin" dist --two-phase "$n" --threads 1
    u=$(sed -n 's/^unique states: \([0-9]*\).*/\1/p' "$work/dist$n.out")
    check_count "$n" "ckpt dist" "$u"
    read -r secs cpu rss < <(usage_of "$work/dist$n")
    row "$n" "ckpt-model dist (1 worker)" "$u" "$secs" "$cpu" "$rss"

    for kind in dfs bfs; do
        timed "$work/$kind$n" "$bin" dist --two-phase "$n" --threads 1 --stateright "$kind"
        u=$(sed -n 's/.*: \([0-9]*\) unique states,.*/\1/p' "$work/$kind$n.out")
        check_count "$n" "stateright $kind" "$u"
        read -r secs cpu rss < <(usage_of "$work/$kind$n")
        name=$([ "$kind" = dfs ] && echo "stateright DfsChecker" || echo "stateright BfsChecker")
        row "$n" "$name (1 thread)" "$u" "$secs" "$cpu" "$rss"
    done

    # SPIN: generate and compile the verifier (not timed), then run it.
    # Exhaustive state storage (no bitstate, no compression), no partial-order
    # reduction (one process: it would change nothing), a hash table of
    # 2^w slots for the smallest w with twice as many slots as states (pan's
    # own advice), depth bound far above the model's (pan stops with an
    # error if it is reached).
    (cd "$work" && spin -a -DN="$n" "$pml" >/dev/null &&
        gcc -O2 -DSAFETY -DNOREDUCE -DMEMLIM=8192 -o "pan$n" pan.c)
    w=$(awk -v s="${expect[$n]}" 'BEGIN { w = 0; while (2 ^ w < 2 * s) w++; print w }')
    timed "$work/spin$n" "$work/pan$n" -m10000 -w"$w"
    u=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$work/spin$n.out")
    check_count "$n" "SPIN" "$u"
    grep -q "errors: 0" "$work/spin$n.out" || { cat "$work/spin$n.out" >&2; exit 1; }
    read -r secs cpu rss < <(usage_of "$work/spin$n")
    row "$n" "SPIN pan (exhaustive, -w$w)" "$u" "$secs" "$cpu" "$rss"
done
