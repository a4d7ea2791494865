#!/usr/bin/env bash
# Mutation testing of ckpt-core with cargo-mutants (not part of CI: the whole
# of core takes many hours on 2 cores). Configuration: .cargo/mutants.toml
# (test code is excluded from mutation).
#
# Usage: tests/scripts/mutants.sh [K N] [workspace|core] [extra cargo-mutants args...]
#   K N        round-robin shard K of N, 0-based (default: 0 1, every mutant);
#              shard i of N takes mutants i, i+N, i+2N, ... of the list, so
#              any one shard samples every file
#   workspace  judge each mutant with every test in the workspace, without
#              doctests (default; what the mutation score means)
#   core       judge with ckpt-core's own unit tests only (fast; a mutant it
#              misses may still be caught by the workspace's tests)
#
# Results: tests/mutants/<mode>-shard-K-of-N/{caught,missed,unviable,timeout}.txt
# (committed when they back a figure in the README; the full mutants.out with
# logs stays next to them and is git-ignored). Runs one job at a time.
#
# Example (one thirtieth of core, about 30 minutes on a loaded 2-core box):
#   tests/scripts/mutants.sh 0 30 core --timeout 240
#
# To judge one shard's survivors with other tests, do not add --iterate to
# the same --shard: cargo-mutants shards the list left after dropping the
# caught mutants, so it picks a different set. Select them by file and name
# instead (--file F --re 'NAME$', see tests/mutants/host-rerun/README.md).
set -euo pipefail

k="${1:-0}"
n="${2:-1}"
mode="${3:-workspace}"
shift $(( $# < 3 ? $# : 3 ))

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if ! cargo mutants --version >/dev/null 2>&1; then
    cargo install cargo-mutants --locked
fi

# cargo-mutants 27.1 runs the unmutated baseline with the mutated package's
# tests only, whatever the mode, and derives the test timeout from it: the
# workspace's suite needs a floor of its own.
case "$mode" in
    workspace) tests=(--test-workspace=true --minimum-test-timeout 900) ;;
    core) tests=(--test-package ckpt-core --minimum-test-timeout 60) ;;
    *) echo "mode must be workspace or core, not $mode" >&2; exit 2 ;;
esac

out="tests/mutants/$mode-shard-$k-of-$n"
mkdir -p "$out"
status=0
cargo mutants -p ckpt-core --all-features "${tests[@]}" \
    --shard "$k/$n" --sharding round-robin -j 1 \
    --output "$out" "$@" -- --tests || status=$?
# cargo-mutants exits 2 when mutants were missed, 3 on timeouts: still a run.
for f in caught missed unviable timeout; do
    if [ -f "$out/mutants.out/$f.txt" ]; then
        cp "$out/mutants.out/$f.txt" "$out/$f.txt"
    else
        : >"$out/$f.txt"
    fi
done
c=$(wc -l <"$out/caught.txt"); m=$(wc -l <"$out/missed.txt")
u=$(wc -l <"$out/unviable.txt"); t=$(wc -l <"$out/timeout.txt")
echo "shard $k/$n ($mode tests): caught $c, missed $m, unviable $u, timeout $t"
if [ $((c + m + t)) -gt 0 ]; then
    echo "score (caught + timeout of viable): $(( (100 * (c + t)) / (c + m + t) )) %"
fi
case "$status" in 0 | 2 | 3) exit 0 ;; *) exit "$status" ;; esac
