//! Flink's side: one long-lived harness JVM per version (`tests/flink/run.sh`,
//! protocol in `tests/flink/PROTOCOL.md`), the sequence's events as harness
//! commands, and the harness's response lines normalized into a
//! [`Decision`].

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

use super::decision::{
    Abort, AbortedMsg, AckClass, Armed, CompleteMsg, Decision, PendingView, RequestEnd, StateView,
    TriggerMsg,
};
use super::event::{Event, SeqConfig, Status, TriggerAsk};
use super::profile::{FlinkProfile, Version};

/// What went wrong on Flink's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlinkError {
    /// The JVM could not be started, or did not greet (not built, no java).
    Start(String),
    /// The JVM died, wrote something that is not a response, or reported
    /// a fatal error.
    Crash(String),
    /// The harness refused a command (`bad_request`, `unsupported`,
    /// `sequence_state`, `no_sequence`): nothing was done.
    Refused {
        /// The command.
        cmd: String,
        /// The harness's error kind.
        kind: String,
        /// Its message.
        message: String,
    },
    /// A response this side cannot read.
    Malformed(String),
    /// A recorded source (a regression file) has no response left: the
    /// record ended there (files end at the divergence they were written
    /// for). Not a failure of Flink's side.
    EndOfRecord(String),
}

impl std::fmt::Display for FlinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlinkError::Start(m) => write!(f, "cannot start the Flink harness: {m}"),
            FlinkError::Crash(m) => write!(f, "the Flink harness crashed: {m}"),
            FlinkError::Refused { cmd, kind, message } => {
                write!(f, "the Flink harness refused '{cmd}' ({kind}): {message}")
            }
            FlinkError::Malformed(m) => write!(f, "unreadable harness response: {m}"),
            FlinkError::EndOfRecord(cmd) => write!(f, "no recorded response left for {cmd}"),
        }
    }
}

impl std::error::Error for FlinkError {}

/// Where the harness scripts are: `tests/flink` of this crate's tree.
pub fn default_harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("flink")
}

/// The cache the harness is built into (`CKPT_FLINK_CACHE`, default
/// `~/.cache/ckpt-flink`).
pub fn cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("CKPT_FLINK_CACHE") {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("ckpt-flink")
}

/// Whether `build.sh` built the harness of `version` (its stamp exists).
pub fn is_built(version: Version) -> bool {
    cache_dir()
        .join(version.full())
        .join("classes")
        .join(".built")
        .is_file()
}

/// One running harness JVM.
pub struct Jvm {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
    version: Version,
    /// The hello line.
    pub hello: Value,
}

impl Jvm {
    /// Starts `run.sh VERSION` from `harness_dir`, Flink's log going to
    /// `log` (its level from `CKPT_FLINK_LOG_LEVEL`, default `ERROR`), and
    /// reads the hello line.
    pub fn spawn(harness_dir: &Path, version: Version, log: &Path) -> Result<Jvm, FlinkError> {
        let run = harness_dir.join("run.sh");
        if !run.is_file() {
            return Err(FlinkError::Start(format!(
                "{} does not exist",
                run.display()
            )));
        }
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| FlinkError::Start(format!("{}: {e}", parent.display())))?;
        }
        let err = std::fs::File::create(log)
            .map_err(|e| FlinkError::Start(format!("{}: {e}", log.display())))?;
        let level = std::env::var("CKPT_FLINK_LOG_LEVEL").unwrap_or_else(|_| "ERROR".to_owned());
        let mut child = Command::new("bash")
            .arg(&run)
            .arg(version.short())
            .env("CKPT_FLINK_LOG_LEVEL", level)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| FlinkError::Start(format!("bash {}: {e}", run.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(FlinkError::Start("no pipes to the JVM".to_owned()));
        };
        let mut jvm = Jvm {
            child,
            stdin: BufWriter::new(stdin),
            stdout: BufReader::new(stdout),
            log: log.to_owned(),
            version,
            hello: Value::Null,
        };
        let hello = jvm.read().map_err(|e| match e {
            FlinkError::Crash(m) => FlinkError::Start(m),
            other => other,
        })?;
        if hello.get("type").and_then(Value::as_str) != Some("hello") {
            return Err(FlinkError::Start(format!(
                "first line is not a hello: {hello}"
            )));
        }
        let reported = hello.get("flink").and_then(Value::as_str).unwrap_or("?");
        if reported != version.full() {
            return Err(FlinkError::Start(format!(
                "asked for Flink {}, the harness runs {reported}",
                version.full()
            )));
        }
        jvm.hello = hello;
        Ok(jvm)
    }

    /// The version this JVM runs.
    pub fn version(&self) -> Version {
        self.version
    }

    fn log_tail(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!("exited with {s}"),
            Ok(None) => "still running".to_owned(),
            Err(e) => format!("status unknown: {e}"),
        };
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(12)..].join("\n");
        format!(
            "JVM {status}; last lines of {}:\n{tail}",
            self.log.display()
        )
    }

    fn read(&mut self) -> Result<Value, FlinkError> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| FlinkError::Crash(format!("reading the JVM's stdout: {e}")))?;
        if n == 0 {
            // Give a dying JVM a moment to exit, for its status.
            std::thread::sleep(std::time::Duration::from_millis(200));
            return Err(FlinkError::Crash(format!(
                "end of output without a bye line. {}",
                self.log_tail()
            )));
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| {
            FlinkError::Crash(format!("not a JSON line ({e}): {}", line.trim_end()))
        })?;
        if v.get("type").and_then(Value::as_str) == Some("fatal") {
            return Err(FlinkError::Crash(format!(
                "fatal line: {v}. {}",
                self.log_tail()
            )));
        }
        Ok(v)
    }

    /// Sends one command and returns its response line. A refusal is an
    /// error; a Flink exception is not (the response says what Flink did).
    pub fn send(&mut self, cmd: &Value) -> Result<Value, FlinkError> {
        let line = serde_json::to_string(cmd).map_err(|e| FlinkError::Malformed(e.to_string()))?;
        let io = |e: std::io::Error| FlinkError::Crash(format!("writing to the JVM: {e}"));
        self.stdin.write_all(line.as_bytes()).map_err(io)?;
        self.stdin.write_all(b"\n").map_err(io)?;
        self.stdin.flush().map_err(io)?;
        let v = self.read()?;
        if v.get("type").and_then(Value::as_str) != Some("response") {
            return Err(FlinkError::Crash(format!("expected a response, got {v}")));
        }
        if v.get("ok").and_then(Value::as_bool) == Some(false) {
            let e = v.get("error").cloned().unwrap_or(Value::Null);
            let kind = e
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            if kind != "flink_exception" {
                return Err(FlinkError::Refused {
                    cmd: cmd
                        .get("cmd")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned(),
                    kind,
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                });
            }
        }
        Ok(v)
    }

    /// Ends an open sequence if there is one (after an error mid-sequence),
    /// so that the JVM can serve the next.
    pub fn abandon(&mut self) -> Result<(), FlinkError> {
        match self.send(&json!({"cmd": "end"})) {
            Ok(_) | Err(FlinkError::Refused { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"{\"cmd\":\"quit\"}\n");
        let _ = self.stdin.flush();
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `begin` command of a sequence. The retention policy keeps the
/// store's checkpoints for every status a sequence shuts down with, so that
/// Flink's store discards nothing at shutdown (ckpt leaves that to its host).
pub fn begin_command(config: &SeqConfig) -> Value {
    json!({
        "cmd": "begin",
        "tasks": config.tasks,
        "trigger": config.trigger,
        "interval": config.interval,
        "timeout": config.timeout,
        "min_pause": config.min_pause,
        "max_concurrent": config.max_concurrent,
        "tolerable_failures": config.tolerable_failures,
        "retained": config.retained,
        "hooks": config.hooks,
        "retention": "RETAIN_ON_CANCELLATION",
    })
}

/// The attempts of each task as the last response's state shows them.
fn attempt_of(last: &Value, task: u32, stale: bool) -> Option<u64> {
    let current = last
        .pointer("/state/tasks")?
        .as_array()?
        .iter()
        .find(|t| t.get("task").and_then(Value::as_u64) == Some(u64::from(task)))?
        .get("attempt")?
        .as_u64()?;
    if stale {
        current.checked_sub(1)
    } else {
        Some(current)
    }
}

/// The harness command for one event; `last` is the previous response
/// (its state names the tasks' current attempts).
pub fn command(event: &Event, last: &Value) -> Value {
    let with_attempt = |mut c: Value, task: u32, stale: bool| {
        if stale {
            // An attempt that does not exist is refused by the harness.
            c["attempt"] = json!(attempt_of(last, task, true).unwrap_or(u64::MAX));
        }
        c
    };
    match event {
        Event::Trigger(TriggerAsk::Checkpoint { forced }) => {
            json!({"cmd": "trigger", "kind": "checkpoint", "forced": forced})
        }
        Event::Trigger(TriggerAsk::Savepoint) => json!({"cmd": "trigger", "kind": "savepoint"}),
        Event::Trigger(TriggerAsk::StopWithSavepoint { terminate }) => {
            json!({"cmd": "trigger", "kind": "savepoint", "sync": true, "terminate": terminate})
        }
        Event::Advance { ms } => json!({"cmd": "advance", "ms": ms}),
        Event::Ack {
            task,
            checkpoint,
            state,
            stale,
        } => with_attempt(
            json!({"cmd": "ack", "task": task, "checkpoint": checkpoint, "state": state}),
            *task,
            *stale,
        ),
        Event::Decline {
            task,
            checkpoint,
            reason,
            stale,
        } => with_attempt(
            json!({"cmd": "decline", "task": task, "checkpoint": checkpoint, "reason": reason.name()}),
            *task,
            *stale,
        ),
        Event::TaskFailed { task, legacy } => json!({
            "cmd": "task_failed",
            "task": task,
            "notify": if *legacy { "fail_unacked" } else { "none" },
        }),
        Event::TaskFinished { task } => json!({"cmd": "task_finished", "task": task}),
        Event::TaskRunning { task } => json!({"cmd": "task_running", "task": task}),
        Event::Restart => json!({"cmd": "restart"}),
        Event::StopScheduler => json!({"cmd": "stop_scheduler"}),
        Event::StartScheduler => json!({"cmd": "start_scheduler"}),
        Event::Shutdown(s) => json!({"cmd": "shutdown", "status": match s {
            Status::Canceled => "CANCELED",
            Status::Failed => "FAILED",
            Status::Suspended => "SUSPENDED",
        }}),
        Event::FailNextStore => json!({"cmd": "fail_next_store"}),
        Event::FailNextFinalize => json!({"cmd": "fail_next_finalize"}),
        Event::FailNextId => json!({"cmd": "fail_next_id"}),
        Event::HookDone { checkpoint, ok } => {
            json!({"cmd": "hook_done", "checkpoint": checkpoint, "ok": ok})
        }
    }
}

/// Flink's `CheckpointFailureReason` in the shared enum.
pub fn abort_of(reason: &str) -> Abort {
    match reason {
        "CHECKPOINT_EXPIRED" => Abort::Expired,
        "CHECKPOINT_SUBSUMED" => Abort::Subsumed,
        "TASK_FAILURE" | "TASK_CHECKPOINT_FAILURE" => Abort::TaskFailure,
        "JOB_FAILOVER_REGION" => Abort::Failover,
        "TRIGGER_CHECKPOINT_FAILURE" => Abort::TriggerFailure,
        "FINALIZE_CHECKPOINT_FAILURE" => Abort::FinalizeFailure,
        "CHECKPOINT_COORDINATOR_SUSPEND" => Abort::Suspended,
        "CHECKPOINT_COORDINATOR_SHUTDOWN" => Abort::Shutdown,
        "PERIODIC_SCHEDULER_SHUTDOWN" => Abort::PeriodicSchedulerShutdown,
        "MINIMUM_TIME_BETWEEN_CHECKPOINTS" => Abort::MinimumTimeBetweenCheckpoints,
        "NOT_ALL_REQUIRED_TASKS_RUNNING" => Abort::NotAllRequiredTasksRunning,
        "TOO_MANY_CHECKPOINT_REQUESTS" => Abort::TooManyRequests,
        r if r.starts_with("CHECKPOINT_DECLINED") || r == "CHECKPOINT_ASYNC_EXCEPTION" => {
            Abort::Declined(r.to_owned())
        }
        other => Abort::Other(other.to_owned()),
    }
}

fn u(v: &Value, key: &str) -> Result<u64, FlinkError> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| FlinkError::Malformed(format!("no integer '{key}' in {v}")))
}

fn u32_of(v: &Value, key: &str) -> Result<u32, FlinkError> {
    u32::try_from(u(v, key)?)
        .map_err(|_| FlinkError::Malformed(format!("'{key}' too large in {v}")))
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `Some(value)` when the response carries the field (`Some(None)` for null).
fn carried(v: &Value, key: &str) -> Option<Option<u64>> {
    v.get(key).map(Value::as_u64)
}

/// Normalizes one response line. `profile` says which notify fields the
/// version carries.
pub fn decision(resp: &Value, profile: &FlinkProfile) -> Result<Decision, FlinkError> {
    let mut d = Decision {
        triggers: Vec::new(),
        hooks: Vec::new(),
        completes: Vec::new(),
        aborts: Vec::new(),
        completed: Vec::new(),
        aborted: Vec::new(),
        requests: Vec::new(),
        discarded: Vec::new(),
        fail_job: Some(u32::try_from(list(resp, "fail_job").len()).unwrap_or(u32::MAX)),
        ack: None,
        restored: None,
        state: state_view(resp)?,
    };
    for r in list(resp, "rpcs") {
        match r.get("rpc").and_then(Value::as_str) {
            Some("trigger") => d.triggers.push(TriggerMsg {
                checkpoint: u(r, "checkpoint")?,
                task: u32_of(r, "task")?,
                attempt: u32_of(r, "attempt")?,
                savepoint: flag(r, "savepoint"),
                sync: flag(r, "sync"),
                terminate: r.get("post_action").and_then(Value::as_str) == Some("TERMINATE"),
                ts: r.get("ts").and_then(Value::as_u64),
                mode: Some(trigger_mode(r)),
            }),
            Some("notify_complete") => d.completes.push(CompleteMsg {
                checkpoint: u(r, "checkpoint")?,
                task: u32_of(r, "task")?,
                attempt: u32_of(r, "attempt")?,
                ts: r.get("ts").and_then(Value::as_u64),
                last_subsumed: if profile.complete_carries_last_subsumed {
                    carried(r, "last_subsumed")
                } else {
                    None
                },
            }),
            Some("notify_aborted") => d.aborts.push(AbortedMsg {
                checkpoint: u(r, "checkpoint")?,
                task: u32_of(r, "task")?,
                attempt: u32_of(r, "attempt")?,
                ts: r.get("ts").and_then(Value::as_u64),
                latest_completed: if profile.aborted_carries_latest {
                    carried(r, "latest_completed")
                } else {
                    None
                },
            }),
            Some("master_hook") => d.hooks.push(u(r, "checkpoint")?),
            _ => return Err(FlinkError::Malformed(format!("unexpected RPC {r}"))),
        }
    }
    for c in list(resp, "completed") {
        d.completed
            .push((u(c, "checkpoint")?, flag(c, "savepoint")));
    }
    for a in list(resp, "aborted") {
        let reason = a.get("reason").and_then(Value::as_str).unwrap_or("?");
        d.aborted.push((u(a, "checkpoint")?, abort_of(reason)));
    }
    for q in list(resp, "requests") {
        let n = u32_of(q, "request")?;
        let end = match q.get("status").and_then(Value::as_str) {
            Some("completed") => RequestEnd::Completed(u(q, "checkpoint")?),
            _ => match q.get("reason").and_then(Value::as_str) {
                Some(r) => RequestEnd::Failed(abort_of(r)),
                // The future failed with a plain exception (a failed
                // metadata write throws an IOException, not a
                // CheckpointException): its reason is the one Flink gave
                // the checkpoint it aborted in the same command.
                None => match d.aborted.as_slice() {
                    [(_, why)] => RequestEnd::Failed(why.clone()),
                    _ => RequestEnd::Failed(Abort::Other(
                        q.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned(),
                    )),
                },
            },
        };
        d.requests.push((n, end));
    }
    for h in list(resp, "discarded") {
        d.discarded.push(u(h, "handle")?);
    }
    if let Some(r) = resp.get("result") {
        if let Some(class) = r.get("ack_class").and_then(Value::as_str) {
            let accepted = flag(r, "accepted");
            d.ack = Some(match class {
                "success" => AckClass::Success,
                "duplicate" => AckClass::Duplicate,
                "unknown" => AckClass::UnknownTask,
                "discarded" => AckClass::Discarded,
                "shutdown" => AckClass::Shutdown,
                "no_pending" if accepted => AckClass::Late,
                _ => AckClass::UnknownCheckpoint,
            });
        }
        if let Some(restore) = r.get("restore") {
            // The restart's restoreLatestCheckpointedStateToSubtasks returns
            // the restored checkpoint's id (an OptionalLong: null for none).
            d.restored = Some(restore.get("returned").and_then(Value::as_u64));
        }
    }
    d.triggers.sort();
    d.hooks.sort_unstable();
    d.hooks.dedup();
    d.completes.sort();
    d.aborts.sort();
    d.completed.sort_unstable();
    d.aborted.sort();
    d.requests.sort();
    d.discarded.sort_unstable();
    Ok(d)
}

/// The harness lists its armed failures as `store:KIND`, `finalize` and
/// `id`; the store's kind (exception or inconsistent) is not a difference
/// ckpt's side can have, so it is dropped. Anything else is a harness the
/// comparator does not know: malformed.
fn armed(st: &Value) -> Result<Armed, FlinkError> {
    let mut a = Armed::default();
    for f in list(st, "armed_failures") {
        match f.as_str() {
            Some(s) if s.starts_with("store:") => a.store = true,
            Some("finalize") => a.finalize = true,
            Some("id") => a.id = true,
            other => {
                return Err(FlinkError::Malformed(format!(
                    "an armed failure the comparator does not know: {other:?}"
                )))
            }
        }
    }
    Ok(a)
}

/// A trigger's options beyond its type, as one comparable word list.
fn trigger_mode(r: &Value) -> String {
    let word = |key: &str, yes: &'static str, no: &'static str| if flag(r, key) { yes } else { no };
    format!(
        "{} {} {}",
        word("unaligned", "unaligned", "aligned"),
        word("exactly_once", "exactly-once", "at-least-once"),
        word("default_location", "default-location", "target-location")
    )
}

fn state_view(resp: &Value) -> Result<StateView, FlinkError> {
    let st = resp
        .get("state")
        .ok_or_else(|| FlinkError::Malformed("a response without state".to_owned()))?;
    let mut pending = Vec::new();
    for p in list(st, "pending") {
        let mut acked: Vec<u32> = list(p, "acked")
            .iter()
            .filter_map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
            .collect();
        acked.sort_unstable();
        pending.push(PendingView {
            checkpoint: u(p, "checkpoint")?,
            savepoint: flag(p, "savepoint"),
            acked,
            ts: p.get("ts").and_then(Value::as_u64),
        });
    }
    pending.sort();
    let mut store = Vec::new();
    for c in list(st, "store") {
        store.push((u(c, "checkpoint")?, flag(c, "savepoint")));
    }
    let periodic_at = list(st, "timers")
        .iter()
        .find(|t| t.get("kind").and_then(Value::as_str) == Some("periodic"))
        .and_then(|t| t.get("at").and_then(Value::as_u64));
    Ok(StateView {
        pending,
        queued: u32_of(st, "queued")?,
        store,
        failure_counter: Some(u(st, "failure_counter")?),
        periodic: flag(st, "periodic"),
        periodic_at,
        shutdown: flag(st, "shutdown"),
        armed: armed(st)?,
    })
}
