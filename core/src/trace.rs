//! JSON-lines traces: a header line naming the machines' configurations, then
//! one line per event with the `now` it was delivered at. Hosts and the model
//! checker write them; [`replay`] runs them through the real reducers, checks
//! every invariant at every step and reports each step's effects.
//!
//! ```text
//! {"kind":"header","version":1,"coordinator":{...settings...},"tasks":[[0,{...task config...}],...]}
//! {"kind":"coordinator","now":0,"event":"StartScheduler"}
//! {"kind":"task","now":5,"task":1,"event":{"BarrierReceived":{"checkpoint":1,"via":"Netty"}}}
//! ```
//!
//! Readers take any `BufRead` and writers any `Write`: `core` opens no files.
//! Malformed, truncated or out-of-place lines are a typed [`TraceError`]
//! naming the line; nothing panics on input.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::coordinator::{self, CoordinatorEvent, CoordinatorSettings, CoordinatorState};
use crate::invariants::checked;
use crate::invariants::coordinator::HandleLedger;
use crate::invariants::Violation;
use crate::task::{self, TaskConfig, TaskEvent, TaskState};
use crate::types::{Millis, TaskId};

/// The trace format version this crate reads and writes.
pub const TRACE_VERSION: u32 = 1;
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
        /// When.
        now: Millis,
        /// What.
        event: CoordinatorEvent,
    },
    /// An event delivered to one task.
    Task {
        /// When.
        now: Millis,
        /// Which task.
        task: TaskId,
        /// What.
        event: TaskEvent,
    },
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

/// Why a trace could not be read.
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
    /// A line is not valid JSON for a trace line (malformed or truncated).
    #[error("line {line}: malformed trace line: {message}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// serde's explanation.
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
    /// A version this crate does not read.
    #[error("line {line}: trace version {version} (this reader knows {TRACE_VERSION})")]
    UnsupportedVersion {
        /// 1-based line number.
        line: usize,
        /// The version found.
        version: u32,
    },
    /// Too many tasks, or a task declared twice.
    #[error("line {line}: bad task list: {message}")]
    BadTasks {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An event for a machine the header does not declare.
    #[error("line {line}: event for an undeclared machine")]
    UndeclaredMachine {
        /// 1-based line number.
        line: usize,
    },
    /// The input is empty.
    #[error("empty trace")]
    Empty,
}

/// Parses a trace from JSON lines. Blank lines are skipped.
pub fn read_trace<R: BufRead>(mut reader: R) -> Result<Trace, TraceError> {
    let mut trace: Option<Trace> = None;
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        line += 1;
        let limit = u64::try_from(LINE_MAX_BYTES + 1).unwrap_or(u64::MAX);
        let n = std::io::Read::take(&mut reader, limit)
            .read_until(b'\n', &mut buf)
            .map_err(|e| TraceError::Io {
                line,
                message: e.to_string(),
            })?;
        if n == 0 {
            break;
        }
        if buf.len() > LINE_MAX_BYTES {
            return Err(TraceError::LineTooLong { line });
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let parsed: TraceLine = serde_json::from_str(text).map_err(|e| TraceError::Malformed {
            line,
            message: e.to_string(),
        })?;
        trace = Some(accept(trace, parsed, line)?);
    }
    trace.ok_or(TraceError::Empty)
}

/// Parses a trace held in a string.
pub fn parse_trace(text: &str) -> Result<Trace, TraceError> {
    read_trace(text.as_bytes())
}

fn accept(trace: Option<Trace>, parsed: TraceLine, line: usize) -> Result<Trace, TraceError> {
    match (trace, parsed) {
        (
            None,
            TraceLine::Header {
                version,
                coordinator,
                tasks,
            },
        ) => {
            if version != TRACE_VERSION {
                return Err(TraceError::UnsupportedVersion { line, version });
            }
            if tasks.len() > TASKS_MAX {
                return Err(TraceError::BadTasks {
                    line,
                    message: format!("{} tasks (at most {TASKS_MAX})", tasks.len()),
                });
            }
            let mut ids: Vec<TaskId> = tasks.iter().map(|(t, _)| *t).collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.len() != tasks.len() {
                return Err(TraceError::BadTasks {
                    line,
                    message: "a task is declared twice".into(),
                });
            }
            Ok(Trace {
                coordinator,
                tasks,
                steps: Vec::new(),
            })
        }
        (None, TraceLine::Coordinator { .. } | TraceLine::Task { .. }) => {
            Err(TraceError::MissingHeader { line })
        }
        (Some(_), TraceLine::Header { .. }) => Err(TraceError::DuplicateHeader { line }),
        (Some(mut t), step @ TraceLine::Coordinator { .. }) => {
            if t.coordinator.is_none() {
                return Err(TraceError::UndeclaredMachine { line });
            }
            t.steps.push(step);
            Ok(t)
        }
        (Some(mut t), step @ TraceLine::Task { task, .. }) => {
            if !t.tasks.iter().any(|(id, _)| *id == task) {
                return Err(TraceError::UndeclaredMachine { line });
            }
            t.steps.push(step);
            Ok(t)
        }
    }
}

/// Writes `trace` as JSON lines (header first).
pub fn write_trace<W: Write>(mut w: W, trace: &Trace) -> std::io::Result<()> {
    let header = TraceLine::Header {
        version: TRACE_VERSION,
        coordinator: trace.coordinator.clone(),
        tasks: trace.tasks.clone(),
    };
    for line in std::iter::once(&header).chain(&trace.steps) {
        serde_json::to_writer(&mut w, line).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// One replayed step, rendered for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedStep {
    /// 0-based step index.
    pub index: usize,
    /// `coordinator` or `task N`.
    pub machine: String,
    /// The event.
    pub event: String,
    /// The effects, one string each.
    pub effects: Vec<String>,
    /// The outcome.
    pub outcome: String,
}

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReplayReport {
    /// Every step that ran (up to and including a violating one).
    pub steps: Vec<ReplayedStep>,
    /// The first invariant violation, with the index of its step.
    pub violation: Option<(usize, Violation)>,
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
        /// Which task.
        task: TaskId,
        /// Why.
        error: task::TaskError,
    },
}

/// Replays `trace` through the real reducers, checking the coordinator's and
/// every task's invariants after each step. Stops at the first violation.
pub fn replay(trace: &Trace) -> Result<ReplayReport, ReplayError> {
    let mut coord = match &trace.coordinator {
        Some(s) => Some(CoordinatorState::from_settings(s.clone())?),
        None => None,
    };
    let mut ledger = HandleLedger::new();
    let mut tasks: BTreeMap<TaskId, (TaskState, crate::invariants::task::TaskMonitor)> =
        BTreeMap::new();
    for (id, cfg) in &trace.tasks {
        let st =
            TaskState::new(cfg.clone()).map_err(|error| ReplayError::Task { task: *id, error })?;
        tasks.insert(*id, (st, crate::invariants::task::TaskMonitor::new()));
    }
    let mut report = ReplayReport::default();
    for (index, line) in trace.steps.iter().enumerate() {
        let checked = match line {
            TraceLine::Coordinator { now, event } => {
                let Some(before) = coord.as_ref() else {
                    continue;
                };
                let (t, r) = checked::coordinator_step(
                    &mut ledger,
                    before,
                    *now,
                    event,
                    checked::Rigor::Invariants,
                );
                report.steps.push(ReplayedStep {
                    index,
                    machine: "coordinator".into(),
                    event: format!("{event:?}"),
                    effects: t.step.effects.iter().map(|e| format!("{e:?}")).collect(),
                    outcome: format!("{:?}", t.step.outcome),
                });
                coord = Some(t.state);
                r
            }
            TraceLine::Task { now, task, event } => {
                let Some((st, monitor)) = tasks.get_mut(task) else {
                    continue;
                };
                let (t, r) =
                    checked::task_step(monitor, st, *now, event, checked::Rigor::Invariants);
                report.steps.push(ReplayedStep {
                    index,
                    machine: format!("task {task}"),
                    event: format!("{event:?}"),
                    effects: t.step.effects.iter().map(|e| format!("{e:?}")).collect(),
                    outcome: format!("{:?}", t.step.outcome),
                });
                *st = t.state;
                r
            }
            TraceLine::Header { .. } => Ok(()),
        };
        if let Err(v) = checked {
            report.violation = Some((index, v));
            break;
        }
    }
    Ok(report)
}
