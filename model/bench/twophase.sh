#!/usr/bin/env bash
# Two-phase commit side by side, in one run: ckpt's depth-first engine
# (`dist --two-phase N --engine`, the engine `check` uses, through its
# adapter for a plain stateright::Model), stateright's DfsChecker and
# BfsChecker (`dist --two-phase N --stateright dfs|bfs`), ckpt-model's
# distributed search (`dist --two-phase N`, one process) and SPIN on
# model/bench/twophase.pml, for N resource managers (default 7 8 9), each
# checker in its own process. The checkers take turns (A B C A B C ...)
# for ROUNDS rounds (default 2), so that a change in the machine's load
# falls on all of them; the 1-minute load average is printed beside each
# row. THREADS (default 1) is the thread count of ckpt's engine and of
# stateright's checkers (SPIN's search is sequential: its rows say 1; the
# distributed search runs THREADS workers). CHECKERS picks and orders the checkers
# (default "engine dfs bfs dist spin").
# Prints a Markdown table: unique states, wall time, CPU time (user +
# system), states per wall and per CPU second, peak RSS (GNU time's
# maximum resident set size). On a shared machine the wall time depends on
# the load; the CPU time much less. A checker whose count is not
# stateright's published one fails the run.
#
#   bash model/bench/twophase.sh            # release build of ckpt-model first
#   bash model/bench/twophase.sh 7          # one size only
#   THREADS=2 ROUNDS=1 CHECKERS="engine dfs" bash model/bench/twophase.sh 9
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
threads="${THREADS:-1}"
rounds="${ROUNDS:-2}"
read -r -a checkers <<<"${CHECKERS:-engine dfs bfs dist spin}"

echo "| N | round | checker | threads | unique states | wall s | CPU s | states per wall s | states per CPU s | peak RSS MiB | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"

# row N ROUND NAME UNIQUE WALL CPU RSS_KB LOAD THREADS
row() {
    local rate wrate
    rate=$(awk -v u="$4" -v s="$6" 'BEGIN { if (s > 0) printf "%.0f", u / s; else print "-" }')
    wrate=$(awk -v u="$4" -v s="$5" 'BEGIN { if (s > 0) printf "%.0f", u / s; else print "-" }')
    printf '| %s | %s | %s | %s | %s | %.2f | %.2f | %s | %s | %.0f | %s |\n' "$1" "$2" "$3" "$9" "$4" "$5" "$6" "$wrate" "$rate" "$(awk -v k="$7" 'BEGIN { print k / 1024 }')" "$8"
}

load1() { cut -d' ' -f1 /proc/loadavg; }
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

# one N ROUND CHECKER: runs one checker once and prints its row.
one() {
    local n="$1" r="$2" f="$work/$3$1.$2" u secs cpu rss load used="$threads"
    load=$(load1)
    case "$3" in
    engine)
        timed "$f" "$bin" dist --two-phase "$n" --threads "$threads" --engine
        u=$(sed -n 's/.*: \([0-9]*\) unique states,.*/\1/p' "$f.out")
        name="ckpt engine (DFS)"
        ;;
    dfs | bfs)
        timed "$f" "$bin" dist --two-phase "$n" --threads "$threads" --stateright "$3"
        u=$(sed -n 's/.*: \([0-9]*\) unique states,.*/\1/p' "$f.out")
        name=$([ "$3" = dfs ] && echo "stateright DfsChecker" || echo "stateright BfsChecker")
        ;;
    dist)
        timed "$f" "$bin" dist --two-phase "$n" --threads "$threads"
        u=$(sed -n 's/^unique states: \([0-9]*\).*/\1/p' "$f.out")
        name="ckpt dist (BFS, 1 process)"
        ;;
    spin)
        # Exhaustive state storage (no bitstate, no compression), no
        # partial-order reduction (one process: it would change nothing),
        # a hash table of 2^w slots for the smallest w with twice as many
        # slots as states (pan's own advice), depth bound far above the
        # model's (pan stops with an error if it is reached).
        local w
        w=$(awk -v s="${expect[$n]}" 'BEGIN { w = 0; while (2 ^ w < 2 * s) w++; print w }')
        timed "$f" "$work/pan$n" -m10000 -w"$w"
        u=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$f.out")
        grep -q "errors: 0" "$f.out" || { cat "$f.out" >&2; exit 1; }
        name="SPIN pan (exhaustive, -w$w)"
        used=1
        ;;
    *)
        echo "error: unknown checker $3" >&2
        exit 2
        ;;
    esac
    check_count "$n" "$name" "$u"
    read -r secs cpu rss < <(usage_of "$f")
    row "$n" "$r" "$name" "$u" "$secs" "$cpu" "$rss" "$load" "$used"
}

for n in "${sizes[@]}"; do
    # SPIN: generate and compile the verifier once per N (not timed).
    if [[ " ${checkers[*]} " == *" spin "* ]]; then
        (cd "$work" && spin -a -DN="$n" "$pml" >/dev/null &&
            gcc -O2 -DSAFETY -DNOREDUCE -DMEMLIM=8192 -o "pan$n" pan.c)
    fi
    for ((r = 1; r <= rounds; r++)); do
        for c in "${checkers[@]}"; do
            one "$n" "$r" "$c"
        done
    done
done
