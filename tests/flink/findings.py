#!/usr/bin/env python3
"""The scenarios behind FINDINGS.md: each runs through the real Flink coordinators (run.sh) and
prints Flink's responses in a compact form, one line per command.

    tests/flink/findings.py                      # every scenario, every version
    tests/flink/findings.py savepoint-late 2.3   # one scenario (prefix match), one version
    tests/flink/findings.py --list
    tests/flink/findings.py --raw failure-reasons 1.11

Build first (tests/flink/build.sh). Nothing here decides anything: the output is Flink's.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run.sh")


def A(t, c, s=None, **k):
    return dict(cmd="ack", task=t, checkpoint=c, state=s, **k)


def B(**k):
    return dict(cmd="begin", **k)


def T(kind="checkpoint", **k):
    return dict(cmd="trigger", kind=kind, **k)


def D(t, c, r="CHECKPOINT_DECLINED", **k):
    return dict(cmd="decline", task=t, checkpoint=c, reason=r, **k)


def ADV(ms):
    return dict(cmd="advance", ms=ms)


END = dict(cmd="end")

SCENARIOS = {
    "savepoint-store": ("Is a completed savepoint stored, retained, notified, restored?",
        [B(tasks=2, retained=1), T(), A(0, 1, 10), A(1, 1, 11), T("savepoint"), A(0, 2, 20), A(1, 2, 21),
         dict(cmd="restore_latest"), T(), A(0, 3, 30), A(1, 3, 31), dict(cmd="restore_latest"), END]),
    "savepoint-late": ("A savepoint completes after a newer checkpoint",
        [B(tasks=2, retained=2, max_concurrent=2), T(), A(0, 1, 10), A(1, 1, 11), T("savepoint"), T(),
         A(0, 3, 30), A(1, 3, 31), A(0, 2, 20), A(1, 2, 21), dict(cmd="restore_latest"), T(), A(0, 4, 40), A(1, 4, 41), END]),
    "savepoint-subsumes": ("Does a completed savepoint subsume an older pending checkpoint (async vs sync)?",
        [B(tasks=2, max_concurrent=2), T(), T("savepoint"), A(0, 2, 20), A(1, 2, 21), A(0, 1, 10), A(1, 1, 11), END,
         B(tasks=2, max_concurrent=2), T(), T("savepoint", sync=True), A(0, 2, 20), A(1, 2, 21), A(0, 1, 10), END]),
    "prefer-checkpoint": ("1.11's prefer_checkpoint_for_recovery",
        [B(tasks=1, retained=2, prefer_checkpoint_for_recovery=True), T(), A(0, 1, 10), T("savepoint"), A(0, 2, 20),
         dict(cmd="restore_latest"), END]),
    "notify-args": ("notify_aborted's latest_completed and notify_complete's last_subsumed",
        [B(tasks=2), T(), A(0, 1, 10), A(1, 1, 11), T(), D(1, 2, "TaskNotReady"), T("savepoint"), A(0, 3, 30), A(1, 3, 31),
         T(), D(0, 4), T(), A(0, 5, 50), A(1, 5, 51), END]),
    "failure-savepoints": ("Failure manager and savepoints: declined async / sync savepoint, expired savepoint",
        [B(tasks=1, tolerable_failures=0), T("savepoint"), D(0, 1), T("savepoint", sync=True), D(0, 2, "TaskNotReady"),
         T("savepoint"), ADV(10000), END]),
    "failure-reset": ("Counter reset by a success, counted once per id, fail-job then counting again",
        [B(tasks=1, tolerable_failures=1, max_concurrent=3), T(), T(), T(), D(0, 3), A(0, 2, 20), T(), D(0, 4), T(),
         D(0, 5), T(), D(0, 6), END]),
    "failure-io": ("Expiry, store failure, finalize failure, then success",
        [B(tasks=2, tolerable_failures=5, timeout=100), T(), A(0, 1, 10), ADV(100), A(1, 1, 11),
         dict(cmd="fail_next_store"), T(), A(0, 2, 20), A(1, 2, 21), dict(cmd="fail_next_finalize"), T(), A(0, 3, 30),
         A(1, 3, 31), T(), A(0, 4, 40), A(1, 4, 41), END]),
    "failure-inconsistent": ("A store failure that may have stored (1.20/2.3)",
        [B(tasks=1), dict(cmd="fail_next_store", kind="inconsistent"), T(), A(0, 1, 10), END]),
    "failure-trigger": ("Id-counter failure and master-hook failure",
        [B(tasks=1, tolerable_failures=0), dict(cmd="fail_next_id"), T(), T(), A(0, 1, 10), END,
         B(tasks=1, hooks=1, tolerable_failures=5), T(), A(0, 1, 10), dict(cmd="hook_done", checkpoint=1), T(),
         dict(cmd="hook_done", checkpoint=2, ok=False), END]),
    "hook-expiry": ("A master hook that never answers while its checkpoint expires (FLINK-26394)",
        [B(tasks=1, hooks=1, timeout=100), T(), ADV(100), T(), dict(cmd="hook_done", checkpoint=1), T(), END]),
    "task-failure": ("Pending checkpoints on a task failure: fail_unacked, the scheduler's restart",
        [B(tasks=2, max_concurrent=2), T(), A(0, 1, 10), T(), dict(cmd="task_failed", task=0, notify="fail_unacked"),
         dict(cmd="task_running", task=0), T(), END,
         B(tasks=2, max_concurrent=2), T(), A(0, 1, 10), A(1, 1, 11), T(), dict(cmd="task_failed", task=0), T(),
         dict(cmd="restart", tasks=[0, 1]), T(), END]),
    "tasks-not-running": ("Trigger with a task CREATED / DEPLOYING / FAILED / FINISHED",
        [B(tasks=2, running=[0]), T(), dict(cmd="task_state", task=1, state="DEPLOYING"), T(), END,
         B(tasks=2), dict(cmd="task_failed", task=1), T(), END,
         B(tasks=2), dict(cmd="task_failed", task=0), T(), END]),
    "finished-tasks": ("FLIP-147: finished tasks at trigger time and between trigger and ack",
        [B(tasks=3), dict(cmd="task_finished", task=2), T(), A(0, 1, 10), A(1, 1, 11), dict(cmd="task_finished", task=0),
         T(), END,
         B(tasks=2), T(), A(0, 1, 10), dict(cmd="task_finished", task=1), A(1, 1, 11), T(),
         dict(cmd="task_finished", task=0), T(), END]),
    "late-messages": ("Late, duplicate, unknown, wrong-job acks and declines",
        [B(tasks=2, max_concurrent=3, timeout=100, tolerable_failures=9), T(), A(0, 1, 10), A(1, 1, 11), A(0, 1, 12),
         T(), D(0, 2), A(1, 2, 21), T(), ADV(100), A(1, 3, 31), T(), T(), A(0, 5, 50), A(1, 5, 51), A(1, 4, 41),
         A(0, 99, 990), A(0, 6, 60, wrong_job=True), D(0, 99), END,
         B(tasks=2), T(), A(0, 1, 10), A(0, 1, 11), dict(cmd="task_running", task=0), A(0, 1, 12, attempt=0),
         A(0, 1, 13), END]),
    "periodic": ("Periodic timer, min pause, concurrency queue, stop/start",
        [B(tasks=1, interval=1000, min_pause=0, start_scheduler=True), END,
         B(tasks=1, interval=1000, min_pause=1000, start_scheduler=True), ADV(1000), ADV(500), A(0, 1, 10), ADV(500),
         ADV(500), ADV(500), A(0, 2, 20), T(), T(forced=True), END,
         B(tasks=1, interval=1000, min_pause=1000, start_scheduler=True), ADV(1000), ADV(1000), ADV(1000), A(0, 1, 10),
         ADV(999), ADV(1), T("periodic"), dict(cmd="stop_scheduler"), T("periodic", via="call"),
         dict(cmd="start_scheduler"), dict(cmd="start_scheduler"), END]),
    "queued-timestamp": ("A queued request's timestamp is its start time",
        [B(tasks=1), T(), ADV(500), T(), ADV(500), A(0, 1, 10), END]),
    "shutdown": ("What shutdown discards, per job status and retention",
        [x for st in ("FINISHED", "CANCELED", "FAILED", "SUSPENDED")
         for ret in ("NEVER_RETAIN_AFTER_TERMINATION", "RETAIN_ON_CANCELLATION", "RETAIN_ON_FAILURE")
         for x in (B(tasks=1, retained=2, retention=ret), T(), A(0, 1, 10), T("savepoint"), A(0, 2, 20), T(),
                   A(0, 3, 30), T(), dict(cmd="shutdown", status=st, tag=st + "/" + ret), END)]),
    "unaligned": ("Unaligned checkpoints: max_concurrent > 1 refused; trigger options",
        [B(tasks=1, unaligned=True, max_concurrent=2), B(tasks=1, unaligned=True), T(), END]),
}


def failure_reasons():
    """Every CheckpointFailureReason, declined by a task and aborted by the scheduler."""
    names = ("PERIODIC_SCHEDULER_SHUTDOWN TOO_MANY_CONCURRENT_CHECKPOINTS TOO_MANY_CHECKPOINT_REQUESTS "
             "MINIMUM_TIME_BETWEEN_CHECKPOINTS NOT_ALL_REQUIRED_TASKS_RUNNING EXCEPTION IO_EXCEPTION "
             "BLOCKING_OUTPUT_EXIST CHECKPOINT_ASYNC_EXCEPTION CHANNEL_STATE_SHARED_STREAM_EXCEPTION CHECKPOINT_EXPIRED "
             "CHECKPOINT_SUBSUMED CHECKPOINT_DECLINED CHECKPOINT_DECLINED_TASK_NOT_READY CHECKPOINT_DECLINED_TASK_CLOSING "
             "CHECKPOINT_DECLINED_TASK_NOT_CHECKPOINTING CHECKPOINT_DECLINED_SUBSUMED "
             "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER CHECKPOINT_DECLINED_ALIGNMENT_LIMIT_EXCEEDED "
             "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM CHECKPOINT_COORDINATOR_SHUTDOWN CHECKPOINT_COORDINATOR_SUSPEND "
             "JOB_FAILURE JOB_FAILOVER_REGION TASK_FAILURE TASK_CHECKPOINT_FAILURE "
             "UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE FINALIZE_CHECKPOINT_FAILURE TRIGGER_CHECKPOINT_FAILURE").split()
    cmds = []
    for r in names:
        cmds += [B(tasks=1, tolerable_failures=5), T(), D(0, 1, r, tag=r + " decline"), END,
                 B(tasks=1, tolerable_failures=5), T(), dict(cmd="abort_pending", reason=r, tag=r + " abort"), END]
    return cmds


SCENARIOS["failure-reasons"] = ("Which CheckpointFailureReasons the failure manager counts", failure_reasons())


def compact(d):
    out = [f"{d['cmd']:<15}", "ok " if d["ok"] else "ERR"]
    if "tag" in d:
        out.append(f"[{d['tag']}]")
    if not d["ok"]:
        e = d["error"]
        out.append(f"{e['kind']}: {e.get('message', '')[:140]}")
    res = d.get("result") or {}
    res = {k: v for k, v in res.items() if k not in ("job", "tasks")}
    if res:
        out.append("result=" + json.dumps(res, separators=(",", ":")))
    for r in d.get("rpcs", []):
        x = [r["rpc"]]
        if r.get("task") is not None:
            x.append(f"t{r['task']}a{r['attempt']}")
        x.append(f"cp{r.get('checkpoint')}")
        if "ts" in r:
            x.append(f"@{r['ts']}")
        for k in ("last_subsumed", "latest_completed", "type"):
            if k in r:
                x.append(f"{k}={r[k]}")
        out.append("<" + " ".join(str(y) for y in x) + ">")
    for k in ("completed", "aborted", "store_ops", "discarded", "failure_manager", "fail_job", "requests", "uncaught"):
        if d.get(k):
            v = d[k]
            if k == "fail_job":
                v = [{"call": f["call"]} for f in v]
            out.append(f"{k}=" + json.dumps(v, separators=(",", ":")))
    st = d.get("state")
    if st:
        pend = [(p["checkpoint"], "sp" if p["savepoint"] else "cp", p["not_acked"], p["ts"]) for p in st["pending"]]
        out.append(f"| pending={pend} store={[(c['checkpoint'], c['handles']) for c in st['store']]} "
                   f"queued={st['queued']} triggering={st['triggering']} failures={st['failure_counter']} "
                   f"timers={[(t['kind'], t['at']) for t in st['timers']]}")
    return " ".join(out)


def main(argv):
    raw = "--raw" in argv
    argv = [a for a in argv if a != "--raw"]
    if "--list" in argv:
        for k, (title, _) in SCENARIOS.items():
            print(f"{k:22s} {title}")
        return 0
    versions = [a for a in argv if a[:1].isdigit()] or ["1.11", "1.20", "2.3"]
    names = [a for a in argv if not a[:1].isdigit()]
    chosen = [k for k in SCENARIOS if not names or any(k.startswith(n) for n in names)]
    for v in versions:
        p = subprocess.Popen([RUN, v], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        hello = json.loads(p.stdout.readline())
        print(f"===== Flink {hello['flink']}")
        for k in chosen:
            title, cmds = SCENARIOS[k]
            print(f"--- {k}: {title}")
            for c in cmds:
                p.stdin.write(json.dumps(c) + "\n")
                p.stdin.flush()
                d = json.loads(p.stdout.readline())
                print(json.dumps(d) if raw else "  " + compact(d), flush=True)
            p.stdin.write('{"cmd":"state"}\n')
            p.stdin.flush()
            if json.loads(p.stdout.readline())["ok"]:
                p.stdin.write('{"cmd":"end"}\n')
                p.stdin.flush()
                p.stdout.readline()
        p.stdin.close()
        p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
