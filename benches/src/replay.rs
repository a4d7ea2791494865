//! A long, deterministic, clean trace for the replay bench: a coordinator and
//! four tasks (task 0 the source, tasks 1-3 downstream over netty) driven by
//! a small FIFO host through periodic checkpoint after periodic checkpoint.
//! Every seventh checkpoint task 2's async part fails, so the checkpoint is
//! declined and aborted (notify-aborted reaches every task, the acked handles
//! are discarded); every other one completes, subsumes the retained one and
//! discards its handles. The trace therefore exercises acks, declines,
//! aborts, completions and discards at a steady mix, and the live state stays
//! the same size however long the trace is, which is what lets the bench
//! show whether replay cost depends on the trace's length.

use std::collections::VecDeque;

use ckpt_core::coordinator::{
    self, CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, Timer,
};
use ckpt_core::coordinator::{IoAnswer, IoRequest};
use ckpt_core::task::{self, TaskConfig, TaskEffect, TaskEvent, TaskState};
use ckpt_core::task::{AsyncCommand, WriterCommand};
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{AttemptNo, Millis, StateHandle, TaskId};

use crate::JOB;

/// Tasks in the generated trace.
pub const TRACE_TASKS: u32 = 4;

/// Trace lengths (events, i.e. lines after the header) of the replay bench.
pub const TRACE_LINES: [usize; 3] = [10_000, 100_000, 1_000_000];

enum To {
    Coordinator(CoordinatorEvent),
    Task(TaskId, TaskEvent),
}

/// A clean trace of exactly `lines` events (see the module docs). Panics only
/// if the reducers refuse their own default configuration.
#[must_use]
pub fn long_trace(lines: usize) -> Trace {
    let mut settings = CoordinatorSettings::with_tasks(JOB, TRACE_TASKS);
    settings.interval_ms = 10;
    settings.timeout_ms = 1_000;
    let task_cfg = TaskConfig::default();
    let mut coord = CoordinatorState::from_settings(settings.clone())
        .unwrap_or_else(|e| panic!("bench settings refused: {e}"));
    let mut tasks: Vec<TaskState> = (0..TRACE_TASKS)
        .map(|_| {
            TaskState::new(task_cfg.clone()).unwrap_or_else(|e| panic!("task config refused: {e}"))
        })
        .collect();
    let mut steps = Vec::with_capacity(lines);
    let mut queue: VecDeque<To> = VecDeque::new();
    queue.push_back(To::Coordinator(CoordinatorEvent::StartScheduler));
    let mut now = Millis(0);
    let mut next_id = 1u64;
    while steps.len() < lines {
        let Some(next) = queue.pop_front() else {
            now = coord.timer_deadline(Timer::Periodic).unwrap_or(now);
            queue.push_back(To::Coordinator(CoordinatorEvent::TimerFired {
                timer: Timer::Periodic,
            }));
            continue;
        };
        match next {
            To::Coordinator(event) => {
                let t = coordinator::reduce(&coord, now, event.clone());
                steps.push(TraceLine::Coordinator { now, event });
                coord = t.state;
                for e in &t.step.effects {
                    route_coordinator(e, &mut queue, &mut next_id);
                }
            }
            To::Task(id, event) => {
                let Some(st) = tasks.get_mut(id.0 as usize) else {
                    continue;
                };
                let t = task::reduce(st, now, event.clone());
                steps.push(TraceLine::Task {
                    now,
                    task: id,
                    event,
                });
                *st = t.state;
                for e in &t.step.effects {
                    route_task(id, e, &mut queue);
                }
            }
        }
    }
    Trace {
        coordinator: Some(settings),
        tasks: (0..TRACE_TASKS)
            .map(|t| (TaskId(t), task_cfg.clone()))
            .collect(),
        steps,
    }
}

fn route_coordinator(e: &CoordinatorEffect, queue: &mut VecDeque<To>, next_id: &mut u64) {
    match e {
        CoordinatorEffect::Io {
            request: req,
            generation: _,
        } => {
            let id = ckpt_core::CheckpointId(*next_id);
            if matches!(req, IoRequest::AllocateId { request: _ }) {
                *next_id += 1;
            }
            queue.push_back(To::Coordinator(req.answer(IoAnswer::Ok { id })));
        }
        CoordinatorEffect::Rpc {
            task,
            message,
            attempt: _,
            generation: _,
        } => {
            queue.push_back(To::Task(*task, message.event()));
        }
        CoordinatorEffect::Timer { timer: _, at: _ }
        | CoordinatorEffect::Discard {
            generation: _,
            checkpoint: _,
            handle: _,
        }
        | CoordinatorEffect::Job(_)
        | CoordinatorEffect::Report(_) => {}
    }
}

fn route_task(id: TaskId, e: &TaskEffect, queue: &mut VecDeque<To>) {
    match *e {
        TaskEffect::Writer(WriterCommand::Start(checkpoint)) => {
            queue.push_back(To::Task(id, TaskEvent::WriterCompleted { checkpoint }));
        }
        TaskEffect::Mail(checkpoint) => {
            queue.push_back(To::Task(id, TaskEvent::CheckpointMail { checkpoint }));
        }
        TaskEffect::Downstream(item) => {
            if id.0 == 0 {
                for t in 1..TRACE_TASKS {
                    queue.push_back(To::Task(TaskId(t), item.event()));
                }
            }
        }
        TaskEffect::AsyncPart(AsyncCommand::Start(checkpoint)) => {
            let event = if id.0 == 2 && checkpoint.0 % 7 == 0 {
                TaskEvent::AsyncPartFailed { checkpoint }
            } else {
                TaskEvent::AsyncPartCompleted {
                    checkpoint,
                    handle: StateHandle(checkpoint.0 * u64::from(TRACE_TASKS) + u64::from(id.0)),
                }
            };
            queue.push_back(To::Task(id, event));
        }
        TaskEffect::Coordinator(msg) => {
            queue.push_back(To::Coordinator(msg.event(JOB, id, AttemptNo(0))));
        }
        TaskEffect::Writer(WriterCommand::Abort {
            checkpoint: _,
            cleanup: _,
        })
        | TaskEffect::Writer(WriterCommand::CaptureRecovered {
            checkpoint: _,
            channels: _,
        })
        | TaskEffect::AsyncPart(AsyncCommand::Cancel(_))
        | TaskEffect::Discard(_)
        | TaskEffect::Operators(_)
        | TaskEffect::Fail(_) => {}
    }
}

/// The trace as JSON-lines bytes (what the replay bench reads).
#[must_use]
pub fn trace_bytes(trace: &Trace) -> Vec<u8> {
    let mut buf = Vec::new();
    ckpt_core::trace::write_trace(&mut buf, trace)
        .unwrap_or_else(|e| panic!("writing to memory failed: {e}"));
    buf
}

/// What the replay bench times: read the JSON lines as a stream and replay
/// every step with every invariant checked (as `ckpt-model replay --quiet`
/// does, without printing). Returns the steps replayed; panics on a
/// violation, a refused event or a bad line, which the generated trace must
/// not have.
#[must_use]
pub fn replay_stream(bytes: &[u8]) -> usize {
    let mut reader = ckpt_core::trace::TraceReader::new(bytes)
        .unwrap_or_else(|e| panic!("bench trace unreadable: {e}"));
    let mut replayer = ckpt_core::trace::Replayer::new(reader.header())
        .unwrap_or_else(|e| panic!("bench trace header refused: {e}"));
    for line in reader.by_ref() {
        let line = line.unwrap_or_else(|e| panic!("bench trace line: {e}"));
        let step = replayer
            .step(&line)
            .unwrap_or_else(|e| panic!("bench trace step: {e}"));
        if let Some(v) = step.violation {
            panic!("step {}: {v}", step.step);
        }
        if let Some(r) = step.rejected {
            panic!("step {}: refused: {r}", step.step);
        }
    }
    replayer.steps()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_trace_is_clean_and_exercises_aborts_and_discards() {
        let trace = long_trace(5_000);
        assert_eq!(trace.steps.len(), 5_000);
        let bytes = trace_bytes(&trace);
        assert_eq!(replay_stream(&bytes), 5_000);
        let report = ckpt_core::trace::replay(&trace).unwrap_or_else(|e| panic!("{e}"));
        let effects: Vec<&String> = report.steps.iter().flat_map(|s| &s.effects).collect();
        for wanted in ["Discard {", "Report(Aborted", "Report(Completed"] {
            assert!(
                effects.iter().any(|e| e.starts_with(wanted)),
                "no {wanted} in the generated trace"
            );
        }
    }
}
