//! JSON-lines traces: a header line naming the machines' configurations, then
//! one line per event with the `now` it was delivered at, then an end line
//! with the number of events and, when the writer knew it, what a replay
//! comes to. Hosts and the model checker write them; [`replay`] runs them
//! through the real reducers, checks every invariant at every step and
//! reports each step's effects.
//!
//! ```text
//! {"kind":"header","version":2,"coordinator":{...settings...},"tasks":[[0,{...task config...}],...]}
//! {"kind":"coordinator","now":0,"event":"StartScheduler"}
//! {"kind":"task","now":5,"task":1,"event":{"BarrierReceived":{"checkpoint":1,"via":"Netty"}}}
//! {"kind":"end","steps":2,"expect":{"outcome":"violation","step":2,"invariant":"no_spurious_failure"}}
//! ```
//!
//! **The end line** (format version 2) is what tells a whole trace from one
//! cut at a line boundary, which is otherwise a valid, shorter trace: a
//! version-2 trace that stops before its end line is
//! [`TraceError::Truncated`], one whose end line counts other than the
//! events read is [`TraceError::EndMismatch`], and a line after it is
//! [`TraceError::AfterEnd`]. Version-1 traces (written before the end line
//! existed) are still read; they cannot be checked for truncation, which
//! [`TraceReader::version`] lets a reader say.
//!
//! Readers take any `BufRead` and writers any `Write`: `core` opens no files.
//! Malformed, truncated, non-UTF-8 or out-of-place lines are a typed
//! [`TraceError`] naming the line (once); nothing panics on input.
//!
//! Long traces stream: [`TraceReader`] yields one event line at a time and
//! [`Replayer`] replays one step at a time with memory bounded by the
//! machines' live state; [`read_trace`] and [`replay`] are the whole-trace
//! forms. A *step* is one event delivered to one machine, i.e. one line after
//! the header, numbered from 1.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::coordinator::{self, CoordinatorEvent, CoordinatorSettings, CoordinatorState};
use crate::invariants::checked;
use crate::invariants::coordinator::HandleLedger;
use crate::invariants::task::TaskMonitor;
use crate::invariants::Violation;
use crate::task::{self, Semantics, TaskConfig, TaskEvent, TaskState};
use crate::types::{CheckpointId, Millis, TaskId};

/// The trace format version this crate writes: 2, whose traces end with an
/// end line ([`TraceLine::End`]).
pub const TRACE_VERSION: u32 = 2;
/// The oldest version this crate reads: 1, the same lines without the end
/// line (a cut at a line boundary cannot be noticed in it).
pub const TRACE_VERSION_MIN: u32 = 1;
/// Longest line accepted (a bound on what a reader buffers).
pub const LINE_MAX_BYTES: usize = 1 << 20;
/// Most tasks a trace may declare.
pub const TASKS_MAX: usize = 4_096;

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TraceLine {
    /// The first line: what the machines were configured with.
    Header {
        /// Format version ([`TRACE_VERSION`]).
        version: u32,
        /// The coordinator's settings, if the trace involves one.
        coordinator: Option<CoordinatorSettings>,
        /// Each task's id and configuration.
        tasks: Vec<(TaskId, TaskConfig)>,
    },
    /// An event delivered to the coordinator.
    Coordinator {
        /// The logical time the event was delivered at.
        now: Millis,
        /// The event the coordinator's reducer is given.
        event: CoordinatorEvent,
    },
    /// An event delivered to one task.
    Task {
        /// The logical time the event was delivered at.
        now: Millis,
        /// The task machine it is delivered to (declared in the header).
        task: TaskId,
        /// The event the task's reducer is given.
        event: TaskEvent,
    },
    /// The last line of a version-2 trace: proof that the trace is whole.
    End {
        /// The number of event lines before it.
        steps: usize,
        /// What replaying the trace with the header's configurations came to
        /// when it was written, if the writer knew.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<Expected>,
    },
}

/// What a replay of a trace comes to, as recorded in its end line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Expected {
    /// Every invariant holds at every step.
    Clean,
    /// The first violation is of `invariant`, at step `step` (from 1).
    Violation {
        /// The 1-based step.
        step: usize,
        /// The invariant's name.
        invariant: String,
    },
}

impl Expected {
    /// What `report` came to.
    #[must_use]
    pub fn of(report: &ReplayReport) -> Expected {
        match &report.violation {
            None => Expected::Clean,
            Some((step, v)) => Expected::Violation {
                step: *step,
                invariant: v.invariant.to_string(),
            },
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Clean => write!(f, "every invariant holds"),
            Expected::Violation { step, invariant } => {
                write!(f, "invariant `{invariant}` violated at step {step}")
            }
        }
    }
}

/// A trace's end line, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEnd {
    /// The number of event lines it counts (equal to those read).
    pub steps: usize,
    /// The recorded outcome, if any.
    pub expect: Option<Expected>,
}

/// A whole trace: the header's contents and the events in delivery order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trace {
    /// The coordinator's settings, if any.
    pub coordinator: Option<CoordinatorSettings>,
    /// Each task's configuration.
    pub tasks: Vec<(TaskId, TaskConfig)>,
    /// The events (never `Header` lines).
    pub steps: Vec<TraceLine>,
}

/// Why a trace could not be read. Every variant but [`TraceError::Empty`]
/// names the one (1-based) line it is about.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TraceError {
    /// The underlying reader failed.
    #[error("line {line}: read error: {message}")]
    Io {
        /// 1-based line number.
        line: usize,
        /// The I/O error's text.
        message: String,
    },
    /// A line is not valid UTF-8.
    #[error("line {line}, byte {byte}: not valid UTF-8")]
    InvalidUtf8 {
        /// 1-based line number.
        line: usize,
        /// 1-based byte offset in the line of the first invalid byte.
        byte: usize,
    },
    /// A line is not valid JSON for a trace line (malformed or truncated).
    #[error("line {line}{}: malformed trace line: {message}", column_text(*.column))]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// 1-based column where the JSON reader stopped (0 if unknown).
        column: usize,
        /// serde's explanation, without its own position.
        message: String,
    },
    /// A line longer than [`LINE_MAX_BYTES`].
    #[error("line {line}: longer than {LINE_MAX_BYTES} bytes")]
    LineTooLong {
        /// 1-based line number.
        line: usize,
    },
    /// The first non-empty line is not a header.
    #[error("line {line}: expected the header line first")]
    MissingHeader {
        /// 1-based line number.
        line: usize,
    },
    /// A second header.
    #[error("line {line}: a second header")]
    DuplicateHeader {
        /// 1-based line number.
        line: usize,
    },
    /// A version this crate does not read (checked before any other field
    /// of the header).
    #[error(
        "line {line}: trace version {version} (this reader knows {TRACE_VERSION_MIN} to {TRACE_VERSION})"
    )]
    UnsupportedVersion {
        /// 1-based line number.
        line: usize,
        /// The version found (as written).
        version: String,
    },
    /// Too many tasks, or a task declared twice.
    #[error("line {line}: bad task list: {message}")]
    BadTasks {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A coordinator event in a trace whose header declares no coordinator.
    #[error("line {line}: coordinator event, but the header declares no coordinator")]
    UndeclaredCoordinator {
        /// 1-based line number.
        line: usize,
    },
    /// An event for a task the header does not declare.
    #[error("line {line}: event for task {task}, which the header does not declare ({declared})")]
    UndeclaredTask {
        /// 1-based line number.
        line: usize,
        /// The task named by the event.
        task: TaskId,
        /// The tasks the header declares, for the message.
        declared: String,
    },
    /// A version-2 trace ended without its end line: it was cut short
    /// (at a line boundary; a cut inside a line is [`TraceError::Malformed`]).
    #[error(
        "line {line}: the trace ends after {steps} steps without its end line: it was cut short"
    )]
    Truncated {
        /// 1-based number of the line after the last one read.
        line: usize,
        /// The events read.
        steps: usize,
    },
    /// The end line counts another number of events than were read.
    #[error("line {line}: the end line counts {said} steps, the trace has {read}")]
    EndMismatch {
        /// 1-based line number of the end line.
        line: usize,
        /// The count on the end line.
        said: usize,
        /// The events read before it.
        read: usize,
    },
    /// A line after the end line.
    #[error("line {line}: a line after the end line")]
    AfterEnd {
        /// 1-based line number.
        line: usize,
    },
    /// The input is empty.
    #[error("empty trace")]
    Empty,
}

fn column_text(column: usize) -> String {
    if column == 0 {
        String::new()
    } else {
        format!(", column {column}")
    }
}

/// serde_json's error as `(column, message)` without its "at line 1
/// column N" suffix: a trace names its own line, once.
fn json_error(e: &serde_json::Error) -> (usize, String) {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
    (e.column(), message)
}

fn malformed(line: usize, e: &serde_json::Error) -> TraceError {
    let (column, message) = json_error(e);
    TraceError::Malformed {
        line,
        column,
        message,
    }
}

/// A streaming trace reader: [`TraceReader::new`] reads up to the header,
/// then iterating yields each event line, checked against the header, one
/// at a time (memory bounded by one line, whatever the trace's length).
/// Blank lines are skipped.
pub struct TraceReader<R> {
    reader: R,
    line: usize,
    buf: Vec<u8>,
    header: Trace,
    version: u32,
    events: usize,
    end: Option<TraceEnd>,
    failed: bool,
}

impl<R: BufRead> TraceReader<R> {
    /// Reads up to and including the header line.
    pub fn new(reader: R) -> Result<Self, TraceError> {
        let mut r = TraceReader {
            reader,
            line: 0,
            buf: Vec::new(),
            header: Trace::default(),
            version: TRACE_VERSION,
            events: 0,
            end: None,
            failed: false,
        };
        let Some(text) = r.next_text()? else {
            return Err(TraceError::Empty);
        };
        (r.header, r.version) = header(&text, r.line)?;
        Ok(r)
    }

    /// The header's format version: below 2, the trace has no end line, so
    /// a cut at a line boundary cannot be told from a whole trace.
    #[must_use]
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The end line, once the iteration has reached it (`None` before, and
    /// for a version-1 trace without one).
    #[must_use]
    pub fn end(&self) -> Option<&TraceEnd> {
        self.end.as_ref()
    }

    /// The header's contents (`steps` is empty).
    #[must_use]
    pub fn header(&self) -> &Trace {
        &self.header
    }

    /// The header's contents, to adjust before replaying (for example
    /// [`Trace::set_task_semantics`]).
    pub fn header_mut(&mut self) -> &mut Trace {
        &mut self.header
    }

    /// The 1-based number of the last line read.
    #[must_use]
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next non-blank line as text, or `None` at the end.
    fn next_text(&mut self) -> Result<Option<String>, TraceError> {
        loop {
            self.buf.clear();
            self.line += 1;
            let line = self.line;
            let limit = u64::try_from(LINE_MAX_BYTES + 1).unwrap_or(u64::MAX);
            let n = std::io::Read::take(&mut self.reader, limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| TraceError::Io {
                    line,
                    message: e.to_string(),
                })?;
            if n == 0 {
                return Ok(None);
            }
            if self.buf.len() > LINE_MAX_BYTES {
                return Err(TraceError::LineTooLong { line });
            }
            let text = std::str::from_utf8(&self.buf).map_err(|e| TraceError::InvalidUtf8 {
                line,
                byte: e.valid_up_to() + 1,
            })?;
            let text = text.trim();
            if !text.is_empty() {
                return Ok(Some(text.to_string()));
            }
        }
    }

    fn next_event(&mut self) -> Result<Option<TraceLine>, TraceError> {
        let Some(text) = self.next_text()? else {
            if self.end.is_none() && self.version >= 2 {
                return Err(TraceError::Truncated {
                    line: self.line,
                    steps: self.events,
                });
            }
            return Ok(None);
        };
        let line = self.line;
        if self.end.is_some() {
            return Err(TraceError::AfterEnd { line });
        }
        let parsed: TraceLine = serde_json::from_str(&text).map_err(|e| malformed(line, &e))?;
        match &parsed {
            TraceLine::Header { .. } => return Err(TraceError::DuplicateHeader { line }),
            TraceLine::End { steps, expect } => {
                if *steps != self.events {
                    return Err(TraceError::EndMismatch {
                        line,
                        said: *steps,
                        read: self.events,
                    });
                }
                self.end = Some(TraceEnd {
                    steps: *steps,
                    expect: expect.clone(),
                });
                // Nothing may follow it.
                return self.next_event();
            }
            TraceLine::Coordinator { .. } => {
                if self.header.coordinator.is_none() {
                    return Err(TraceError::UndeclaredCoordinator { line });
                }
            }
            TraceLine::Task { task, .. } => {
                if !self.header.tasks.iter().any(|(id, _)| id == task) {
                    return Err(TraceError::UndeclaredTask {
                        line,
                        task: *task,
                        declared: declared(&self.header.tasks),
                    });
                }
            }
        }
        self.events += 1;
        Ok(Some(parsed))
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceLine, TraceError>;

    /// The next event line; after an error, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_event().transpose();
        if matches!(r, Some(Err(_))) {
            self.failed = true;
        }
        r
    }
}

fn declared(tasks: &[(TaskId, TaskConfig)]) -> String {
    let ids: Vec<String> = tasks.iter().take(8).map(|(t, _)| t.to_string()).collect();
    match tasks.len() {
        0 => "it declares no task".into(),
        n if n > ids.len() => format!("declared: {}, ... ({n} tasks)", ids.join(", ")),
        _ => format!("declared: {}", ids.join(", ")),
    }
}

/// Parses the first non-blank line into the header and its version: the
/// version is checked before any other field, so a trace from another
/// format version is named as such rather than as malformed.
fn header(text: &str, line: usize) -> Result<(Trace, u32), TraceError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| malformed(line, &e))?;
    let mut version = TRACE_VERSION;
    if value.get("kind").and_then(serde_json::Value::as_str) == Some("header") {
        let known = |v: u64| {
            u32::try_from(v)
                .ok()
                .filter(|v| (TRACE_VERSION_MIN..=TRACE_VERSION).contains(v))
        };
        match value.get("version") {
            Some(v) if v.as_u64().and_then(known).is_some() => {
                version = v.as_u64().and_then(known).unwrap_or(TRACE_VERSION);
            }
            Some(v) => {
                return Err(TraceError::UnsupportedVersion {
                    line,
                    version: v.to_string(),
                })
            }
            None => {
                return Err(TraceError::Malformed {
                    line,
                    column: 0,
                    message: "the header has no `version` field".into(),
                })
            }
        }
    }
    let parsed: TraceLine = serde_json::from_value(value).map_err(|e| TraceError::Malformed {
        line,
        column: 0,
        message: json_error(&e).1,
    })?;
    let TraceLine::Header {
        tasks, coordinator, ..
    } = parsed
    else {
        return Err(TraceError::MissingHeader { line });
    };
    if tasks.len() > TASKS_MAX {
        return Err(TraceError::BadTasks {
            line,
            message: format!("{} tasks (at most {TASKS_MAX})", tasks.len()),
        });
    }
    let mut ids: Vec<TaskId> = tasks.iter().map(|(t, _)| *t).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(TraceError::BadTasks {
            line,
            message: format!("task {} is declared twice", w[0]),
        });
    }
    Ok((
        Trace {
            coordinator,
            tasks,
            steps: Vec::new(),
        },
        version,
    ))
}

/// Parses a whole trace from JSON lines into memory ([`TraceReader`] streams
/// it instead). Blank lines are skipped.
pub fn read_trace<R: BufRead>(reader: R) -> Result<Trace, TraceError> {
    let mut r = TraceReader::new(reader)?;
    let mut steps = Vec::new();
    for step in r.by_ref() {
        steps.push(step?);
    }
    let mut trace = r.header;
    trace.steps = steps;
    Ok(trace)
}

/// Parses a trace held in a string.
pub fn parse_trace(text: &str) -> Result<Trace, TraceError> {
    read_trace(text.as_bytes())
}

impl Trace {
    /// Replaces every task's semantics, leaving the coordinator's as
    /// recorded (a task-side knob against the fixed tasks, the coordinator
    /// unchanged).
    pub fn set_task_semantics(&mut self, semantics: Semantics) {
        for (_, cfg) in &mut self.tasks {
            cfg.semantics = semantics;
        }
    }

    /// Replaces every machine's semantics, the coordinator's (when the
    /// trace has one) and every task's: replays a counterexample recorded
    /// in one semantics against other reducers without editing the file.
    /// A knob that belongs to one side changes nothing on the other.
    pub fn set_semantics(&mut self, semantics: Semantics) {
        if let Some(c) = self.coordinator.as_mut() {
            c.semantics = semantics;
        }
        self.set_task_semantics(semantics);
    }
}

/// Writes `trace` as JSON lines: the header, the events, the end line
/// (without a recorded outcome: [`write_trace_expecting`] records one).
pub fn write_trace<W: Write>(w: W, trace: &Trace) -> std::io::Result<()> {
    write_trace_expecting(w, trace, None)
}

/// Writes `trace` as JSON lines with `expect`, what a replay of it comes to,
/// in its end line (a reader can then tell a replay that changed).
pub fn write_trace_expecting<W: Write>(
    mut w: W,
    trace: &Trace,
    expect: Option<&Expected>,
) -> std::io::Result<()> {
    let header = TraceLine::Header {
        version: TRACE_VERSION,
        coordinator: trace.coordinator.clone(),
        tasks: trace.tasks.clone(),
    };
    let end = TraceLine::End {
        steps: trace.steps.len(),
        expect: expect.cloned(),
    };
    for line in std::iter::once(&header)
        .chain(&trace.steps)
        .chain(std::iter::once(&end))
    {
        serde_json::to_writer(&mut w, line).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// One replayed step, rendered for humans. A step is one event delivered to
/// one machine: one line of the trace after the header, numbered from 1.
/// The model checker's counterexamples, `ckpt-model replay` and `model/README.md`
/// use this numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedStep {
    /// 1-based step number.
    pub step: usize,
    /// `coordinator` or `task N`.
    pub machine: String,
    /// The event, as `Debug` writes it.
    pub event: String,
    /// The effects, one string each.
    pub effects: Vec<String>,
    /// The reducer's outcome, as `Debug` writes it.
    pub outcome: String,
    /// The host misuse the reducer refused the event for (`Rejected`), if
    /// any: a recorded trace should contain none.
    pub rejected: Option<String>,
    /// The first invariant this step broke, if any.
    pub violation: Option<Violation>,
}

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReplayReport {
    /// Every step that ran (up to and including a violating one).
    pub steps: Vec<ReplayedStep>,
    /// The first invariant violation, with its 1-based step number.
    pub violation: Option<(usize, Violation)>,
    /// The 1-based numbers of the steps the reducers refused as host misuse.
    pub rejected: Vec<usize>,
}

/// Why a trace could not be replayed at all.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReplayError {
    /// The coordinator settings in the header are invalid.
    #[error("invalid coordinator settings: {0}")]
    Coordinator(#[from] coordinator::ConfigError),
    /// A task configuration in the header is invalid.
    #[error("invalid configuration for task {task}: {error}")]
    Task {
        /// The task whose configuration is refused.
        task: TaskId,
        /// Why the task's reducer refused it.
        error: task::TaskError,
    },
    /// A step for a machine the trace does not declare, or a header or an
    /// end line among the steps (a [`Trace`] built by hand; the readers
    /// never yield them).
    #[error("step {step}: {what}")]
    BadStep {
        /// 1-based step number.
        step: usize,
        /// What is wrong.
        what: String,
    },
}

/// Replays a trace one step at a time through the real reducers, checking
/// the coordinator's and every task's invariants after each step. Memory is
/// bounded by the machines' live state (the invariant monitors keep only
/// live obligations), so a trace of any length streams through it.
pub struct Replayer {
    coord: Option<(CoordinatorState, HandleLedger)>,
    tasks: BTreeMap<TaskId, (TaskState, TaskMonitor)>,
    steps: usize,
}

impl Replayer {
    /// Machines configured as `header` says (its `steps` are ignored).
    pub fn new(header: &Trace) -> Result<Self, ReplayError> {
        let coord = match &header.coordinator {
            Some(s) => Some((
                CoordinatorState::from_settings(s.clone())?,
                HandleLedger::new(),
            )),
            None => None,
        };
        let mut tasks = BTreeMap::new();
        for (id, cfg) in &header.tasks {
            let st = TaskState::new(cfg.clone())
                .map_err(|error| ReplayError::Task { task: *id, error })?;
            tasks.insert(*id, (st, TaskMonitor::new()));
        }
        Ok(Replayer {
            coord,
            tasks,
            steps: 0,
        })
    }

    /// Steps replayed so far.
    #[must_use]
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The checkpoints each task started and has not answered so far
    /// ([`TaskMonitor::unanswered`]): at a run's end, a checkpoint that
    /// hangs on its task.
    #[must_use]
    pub fn unanswered(&self) -> Vec<(TaskId, CheckpointId)> {
        self.tasks
            .iter()
            .flat_map(|(t, (_, m))| m.unanswered().iter().map(move |c| (*t, *c)))
            .collect()
    }

    /// Delivers one event line and checks every invariant it touches.
    pub fn step(&mut self, line: &TraceLine) -> Result<ReplayedStep, ReplayError> {
        self.steps += 1;
        let step = self.steps;
        match line {
            TraceLine::Coordinator { now, event } => {
                let Some((state, ledger)) = self.coord.as_mut() else {
                    return Err(ReplayError::BadStep {
                        step,
                        what: "coordinator event, but no coordinator is declared".into(),
                    });
                };
                let (s, verdict) = checked::coordinator_step_in_place(
                    ledger,
                    state,
                    *now,
                    event,
                    checked::Rigor::Invariants,
                );
                let violation = verdict.err();
                let rejected = match &s.outcome {
                    coordinator::Outcome::Rejected(e) => Some(e.to_string()),
                    coordinator::Outcome::Applied(_) | coordinator::Outcome::Ignored(_) => None,
                };
                Ok(ReplayedStep {
                    step,
                    machine: "coordinator".into(),
                    event: format!("{event:?}"),
                    effects: s.effects.iter().map(|e| format!("{e:?}")).collect(),
                    outcome: format!("{:?}", s.outcome),
                    rejected,
                    violation,
                })
            }
            TraceLine::Task { now, task, event } => {
                let Some((st, monitor)) = self.tasks.get_mut(task) else {
                    return Err(ReplayError::BadStep {
                        step,
                        what: format!("event for task {task}, which is not declared"),
                    });
                };
                let (t, verdict) =
                    checked::task_step(monitor, st, *now, event, checked::Rigor::Invariants);
                let violation = verdict.err();
                let t_step = t.step;
                *st = t.state;
                let rejected = match &t_step.outcome {
                    task::Outcome::Rejected(e) => Some(e.to_string()),
                    task::Outcome::Applied
                    | task::Outcome::Skipped(_)
                    | task::Outcome::Ignored(_) => None,
                };
                Ok(ReplayedStep {
                    step,
                    machine: format!("task {task}"),
                    event: format!("{event:?}"),
                    effects: t_step.effects.iter().map(|e| format!("{e:?}")).collect(),
                    outcome: format!("{:?}", t_step.outcome),
                    rejected,
                    violation,
                })
            }
            TraceLine::Header { .. } => Err(ReplayError::BadStep {
                step,
                what: "a header among the steps".into(),
            }),
            TraceLine::End { .. } => Err(ReplayError::BadStep {
                step,
                what: "an end line among the steps".into(),
            }),
        }
    }
}

/// Replays `trace` through the real reducers, checking the coordinator's and
/// every task's invariants after each step. Stops at the first violation.
pub fn replay(trace: &Trace) -> Result<ReplayReport, ReplayError> {
    let mut r = Replayer::new(trace)?;
    let mut report = ReplayReport::default();
    for line in &trace.steps {
        let s = r.step(line)?;
        if s.rejected.is_some() {
            report.rejected.push(s.step);
        }
        let v = s.violation.clone();
        let n = s.step;
        report.steps.push(s);
        if let Some(v) = v {
            report.violation = Some((n, v));
            break;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
