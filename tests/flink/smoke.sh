#!/usr/bin/env bash
# Quick manual check of the conformance harness: builds it if needed, runs a handful of fixed
# sequences through each Flink version and prints every response (compact; --raw for the JSON
# lines), then measures JVM start, one sequence, and a batch of short sequences in one JVM.
#
#   tests/flink/smoke.sh                 # all versions, 1000-sequence batch
#   tests/flink/smoke.sh --raw 2.3       # one version, full JSON responses
#   CKPT_FLINK_SMOKE_BATCH=200 tests/flink/smoke.sh
#
# Needs python3 (already needed by fetch.sh's pip). Exit status is non-zero when a harness
# crashed or a smoke sequence got an unexpected error.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
raw=0
if [ "${1:-}" = "--raw" ]; then
    raw=1
    shift
fi
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(1.11 1.20 2.3)
"$HERE/build.sh" "${versions[@]}" >/dev/null
command -v python3 >/dev/null 2>&1 || { echo "smoke.sh: python3 is needed" >&2; exit 1; }
exec python3 - "$HERE/run.sh" "$raw" "${CKPT_FLINK_SMOKE_BATCH:-1000}" "${versions[@]}" <<'PY'
import json, subprocess, sys, threading, time

run, raw, batch, versions = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4:]

def ack(t, c, s):
    return {"cmd": "ack", "task": t, "checkpoint": c, "state": s}

SEQUENCES = {
    "complete, subsume, retain": [
        {"cmd": "begin", "tasks": 2, "retained": 1},
        {"cmd": "trigger"}, ack(0, 1, 10), ack(1, 1, 11),
        {"cmd": "trigger"}, ack(0, 2, 20), ack(1, 2, 21),
        {"cmd": "end"}],
    "decline, expiry, failure manager": [
        {"cmd": "begin", "tasks": 2, "timeout": 100, "tolerable_failures": 1},
        {"cmd": "trigger"}, {"cmd": "decline", "task": 1, "checkpoint": 1, "reason": "TaskNotReady"},
        {"cmd": "trigger"}, ack(0, 2, 20), {"cmd": "advance", "ms": 100},
        {"cmd": "trigger"}, {"cmd": "decline", "task": 0, "checkpoint": 3, "reason": "CHECKPOINT_DECLINED"},
        {"cmd": "end"}],
    "savepoint pending while a newer checkpoint completes": [
        {"cmd": "begin", "tasks": 1, "max_concurrent": 2, "retained": 2},
        {"cmd": "trigger", "kind": "savepoint"}, {"cmd": "trigger"}, ack(0, 2, 20), ack(0, 1, 10),
        {"cmd": "restore_latest"}, {"cmd": "end"}],
    "periodic, min pause, queue": [
        {"cmd": "begin", "tasks": 1, "interval": 1000, "min_pause": 1000, "start_scheduler": True},
        {"cmd": "advance", "ms": 1000}, {"cmd": "advance", "ms": 1000}, ack(0, 1, 10),
        {"cmd": "advance", "ms": 1000}, {"cmd": "stop_scheduler"}, {"cmd": "end"}],
    "task failure and restart": [
        {"cmd": "begin", "tasks": 2, "max_concurrent": 2},
        {"cmd": "trigger"}, ack(0, 1, 10), ack(1, 1, 11), {"cmd": "trigger"},
        {"cmd": "task_failed", "task": 1}, {"cmd": "restart", "tasks": [0, 1]}, {"cmd": "end"}],
    "store and finalize failures": [
        {"cmd": "begin", "tasks": 1, "tolerable_failures": 5},
        {"cmd": "fail_next_store"}, {"cmd": "trigger"}, ack(0, 1, 10),
        {"cmd": "fail_next_finalize"}, {"cmd": "trigger"}, ack(0, 2, 20),
        {"cmd": "shutdown", "status": "FAILED"}, {"cmd": "end"}],
}

def compact(d):
    out = [f"{d['cmd']:<16}", "ok " if d["ok"] else "ERR"]
    if not d["ok"]:
        e = d["error"]
        out.append(f"{e['kind']}: {e.get('message', '')[:120]}")
    if d.get("result"):
        out.append("result=" + json.dumps(d["result"], separators=(",", ":"))[:160])
    for r in d.get("rpcs", []):
        x = [r["rpc"], f"t{r.get('task')}a{r.get('attempt')}", f"cp{r.get('checkpoint')}"]
        if "ts" in r:
            x.append(f"@{r['ts']}")
        for k in ("last_subsumed", "latest_completed", "type"):
            if k in r:
                x.append(f"{k}={r[k]}")
        out.append("<" + " ".join(str(y) for y in x) + ">")
    for k in ("completed", "aborted", "store_ops", "discarded", "fail_job", "requests", "uncaught"):
        if d.get(k):
            out.append(f"{k}=" + json.dumps(d[k], separators=(",", ":"))[:240])
    st = d.get("state")
    if st:
        pend = [(p["checkpoint"], "sp" if p["savepoint"] else "cp", p["not_acked"]) for p in st["pending"]]
        out.append(f"| pending={pend} store={[c['checkpoint'] for c in st['store']]} queued={st['queued']} failures={st['failure_counter']}")
    return " ".join(out)

def start(v):
    t0 = time.time()
    p = subprocess.Popen([run, v], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    hello = json.loads(p.stdout.readline())
    if hello.get("type") != "hello":
        raise SystemExit(f"{v}: no hello line: {hello}")
    return p, hello, time.time() - t0

def send(p, c):
    p.stdin.write(json.dumps(c) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        raise SystemExit("harness exited without answering " + json.dumps(c))
    d = json.loads(line)
    if d.get("type") == "fatal":
        raise SystemExit("harness crashed: " + line)
    return d

failed = False
timings = []
for v in versions:
    p, hello, startup = start(v)
    print(f"===== Flink {hello['flink']} ({hello['api']}), protocol {hello['protocol']}")
    for name, cmds in SEQUENCES.items():
        print(f"--- {name}")
        for c in cmds:
            d = send(p, c)
            print(d if raw else "  " + compact(d), flush=True)
            if not d["ok"] and d["error"]["kind"] not in ("flink_exception",):
                failed = True
    # one short sequence, then a pipelined batch
    short = [{"cmd": "begin", "tasks": 2}, {"cmd": "trigger"}, ack(0, 1, 1), ack(1, 1, 2),
             {"cmd": "trigger"}, {"cmd": "decline", "task": 1, "checkpoint": 2, "reason": "TaskNotReady"},
             {"cmd": "advance", "ms": 20000}, {"cmd": "end"}]
    t0 = time.time()
    for c in short:
        send(p, c)
    one = time.time() - t0
    data = "".join(json.dumps(c) + "\n" for c in short) * batch
    t0 = time.time()
    w = threading.Thread(target=lambda: (p.stdin.write(data), p.stdin.flush()), daemon=True)
    w.start()
    errors = 0
    for _ in range(batch * len(short)):
        d = json.loads(p.stdout.readline())
        errors += not d["ok"]
    elapsed = time.time() - t0
    w.join()
    p.stdin.close()
    rc = p.wait()
    timings.append((hello["flink"], startup, one, batch, elapsed, errors, rc))
print()
print("timings (this machine; JVM start = process start until the hello line):")
for f, startup, one, n, el, errors, rc in timings:
    print(f"  Flink {f:6s}: JVM start {startup:.2f} s, first sequence {1000 * one:.0f} ms, "
          f"{n} sequences ({len(SEQUENCES) and 8} commands each) pipelined in {el:.2f} s = {n / el:.0f} seq/s, "
          f"{errors} errors, exit {rc}")
    failed |= errors > 0 or rc != 0
sys.exit(1 if failed else 0)
PY
