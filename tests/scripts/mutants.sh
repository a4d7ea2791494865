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
#   broad      the workspace's tests that exercise ckpt-core: its unit tests,
#              every ckpt-tests suite but loom's (which needs --cfg loom),
#              ckpt-model's lib, model.rs and durability.rs; not the model
#              checker's own tests (reduction.rs, cli.rs, explorer.rs, a
#              third of the workspace's test time) nor the benches' (about
#              twice as fast as workspace; rerun its survivors with
#              workspace before calling one missed)
#   core       judge with ckpt-core's own unit tests only (fastest; a mutant
#              it misses may still be caught by the workspace's tests)
#
# Every mode builds with the `mutants` profile (Cargo.toml: opt-level 1, no
# debug info, incremental): rebuilding after a mutation takes about 4 s
# instead of the test profile's 25-30 s, and the whole workspace's tests run
# in about 40 s on 2 cores.
#
# Results: tests/mutants/<mode>-shard-K-of-N/{caught,missed,unviable,timeout}.txt
# (committed when they back a figure in tests/STRENGTH-*.md; the full mutants.out with
# logs stays next to them and is git-ignored). Runs one job at a time
# (CKPT_MUTANTS_JOBS=2 for two: each job has its own build directory).
#
# Example (a third of core, 506 mutants):
#   CKPT_MUTANTS_JOBS=2 tests/scripts/mutants.sh 0 3 broad
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
    workspace)
        tests=(--test-workspace=true --minimum-test-timeout 300)
        targets=(--tests)
        ;;
    broad)
        # The baseline would run these targets in ckpt-core alone, where
        # they do not exist: skip it (CI runs the same tests unmutated) and
        # set the timeout by hand (the slowest passing run is about 25 s
        # alone, 40 s beside another job; a mutant that hangs the async
        # host's tests costs the whole timeout).
        tests=(--test-package ckpt-core,ckpt-tests,ckpt-model --baseline skip
            --timeout "${CKPT_MUTANTS_TIMEOUT:-90}")
        targets=(--lib)
        for t in tests/tests/*.rs model/tests/model.rs model/tests/durability.rs; do
            name="$(basename "$t" .rs)"
            case "$name" in loom_*) continue ;; esac
            targets+=(--test "$name")
        done
        ;;
    core)
        tests=(--test-package ckpt-core --minimum-test-timeout 60)
        targets=(--tests)
        ;;
    *) echo "mode must be workspace, broad or core, not $mode" >&2; exit 2 ;;
esac

# CKPT_MUTANTS_TAG names a partial run (for example one restricted with
# --file) so that it does not overwrite the shard's lists.
out="tests/mutants/$mode-shard-$k-of-$n${CKPT_MUTANTS_TAG:+-$CKPT_MUTANTS_TAG}"
mkdir -p "$out"
status=0
cargo mutants -p ckpt-core --all-features "${tests[@]}" --profile mutants \
    --shard "$k/$n" --sharding round-robin -j "${CKPT_MUTANTS_JOBS:-1}" \
    --output "$out" "$@" -- "${targets[@]}" || status=$?
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
