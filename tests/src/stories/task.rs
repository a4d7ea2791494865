//! Single-task stories: barriers on either thread, triggers, mails in any
//! order, cancel markers, coordinator notifications, writer and async-part
//! reports, failures and close, plus raw arbitrary events.

use arbitrary::Arbitrary;
use ckpt_core::invariants::checked::{self, Rigor};
use ckpt_core::invariants::task::TaskMonitor;
use ckpt_core::invariants::Violation;
use ckpt_core::task::{Outcome, Semantics, TaskConfig, TaskEffect, TaskEvent, TaskState};
use ckpt_core::trace::{Trace, TraceLine};
use ckpt_core::{CheckpointId, Millis, StateHandle, TaskId, Thread};

use super::{pick, Failure};

/// One abstract step of a task story. `pick` chooses among the ids the task
/// knows about plus a few new and extreme ones (see `pick_checkpoint`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub enum TaskAction {
    /// A barrier on the netty (remote) or task (local) thread.
    Barrier {
        /// Which checkpoint.
        pick: u8,
        /// Remote channel.
        netty: bool,
    },
    /// A barrier delivered by a thread that cannot deliver barriers (misuse).
    BarrierWrongThread {
        /// Which checkpoint.
        pick: u8,
    },
    /// A trigger (source task).
    Trigger {
        /// Which checkpoint.
        pick: u8,
    },
    /// Run the oldest scheduled mail (FIFO, as a real mailbox).
    RunOldestMail,
    /// A mail for any id (possibly never scheduled).
    Mail {
        /// Which checkpoint.
        pick: u8,
    },
    /// A cancel marker.
    Cancel {
        /// Which checkpoint.
        pick: u8,
    },
    /// Notify aborted.
    NotifyAborted {
        /// Which checkpoint.
        pick: u8,
    },
    /// Notify complete.
    NotifyComplete {
        /// Which checkpoint.
        pick: u8,
    },
    /// The writer reports.
    Writer {
        /// Which checkpoint.
        pick: u8,
        /// Failed (else completed).
        fail: bool,
    },
    /// The async part reports.
    Async {
        /// Which checkpoint.
        pick: u8,
        /// Failed (else completed with a fresh handle).
        fail: bool,
    },
    /// A genuine operator failure.
    OperatorFailed,
    /// The task's input ended (`EndOfInput`).
    EndOfInput,
    /// A step of the replay of in-flight channel state (folded: 0
    /// `RecoveryStarted` with `n / 3 % 4` channels, 1 `ChannelRecovered`,
    /// 2 `RecoveryFinished`); a task deployed without state to replay
    /// ignores them (typed).
    Recovery(u8),
    /// Close.
    Close,
    /// An arbitrary event (handles renumbered to stay unique).
    Raw(TaskEvent),
}

/// A whole task story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Arbitrary)]
pub struct TaskStory {
    /// The semantics (legacy ones are expected to break `no_spurious_failure`).
    pub semantics: Semantics,
    /// Bound of the aborted-id memory (folded to 1..=4); the quotient of
    /// that fold says whether the attempt replays in-flight channel state
    /// (bit 0) and checkpoints during that recovery (bit 1).
    pub aborted_ids_max: u8,
    /// The actions.
    pub actions: Vec<TaskAction>,
}

impl TaskStory {
    /// The task configuration.
    #[must_use]
    pub fn config(&self) -> TaskConfig {
        TaskConfig {
            semantics: self.semantics,
            aborted_ids_max: usize::from(self.aborted_ids_max % 4) + 1,
            checkpoint_during_recovery: (self.aborted_ids_max / 4) & 2 != 0,
            replays_channel_state: (self.aborted_ids_max / 4) & 1 != 0,
        }
    }
}

/// One delivered event and what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// What.
    pub event: TaskEvent,
    /// The effects.
    pub effects: Vec<TaskEffect>,
    /// The outcome.
    pub outcome: Outcome,
    /// The state after.
    pub state: TaskState,
}

/// Drives one task, checking every invariant after every event.
#[derive(Clone, Debug)]
pub struct TaskDriver {
    /// The state.
    pub state: TaskState,
    /// The cross-step monitor.
    pub monitor: TaskMonitor,
    /// Every delivered event.
    pub records: Vec<TaskRecord>,
    next_handle: u64,
}

impl TaskDriver {
    /// A fresh task.
    pub fn new(config: TaskConfig) -> Result<Self, ckpt_core::task::TaskError> {
        Ok(TaskDriver {
            state: TaskState::new(config)?,
            monitor: TaskMonitor::new(),
            records: Vec::new(),
            next_handle: 1,
        })
    }

    /// The events delivered so far as a trace (task 0, time 0).
    #[must_use]
    pub fn trace(&self) -> Trace {
        Trace {
            coordinator: None,
            tasks: vec![(TaskId(0), self.state.config().clone())],
            steps: self
                .records
                .iter()
                .map(|r| TraceLine::Task {
                    now: Millis(0),
                    task: TaskId(0),
                    event: r.event.clone(),
                })
                .collect(),
        }
    }

    /// Delivers one event through the checked step in place
    /// (`checked::task_step_in_place` without a copy): every task invariant
    /// (state, step, monitor, quiescence), and pure and in-place agree.
    pub fn deliver(&mut self, event: TaskEvent) -> Result<(), Violation> {
        let (step, verdict) = checked::task_step_in_place(
            &mut self.monitor,
            None,
            &mut self.state,
            Millis(0),
            &event,
            Rigor::Full,
        );
        self.records.push(TaskRecord {
            event,
            effects: step.effects,
            outcome: step.outcome,
            state: self.state.clone(),
        });
        verdict
    }

    fn pick_checkpoint(&self, p: u8) -> CheckpointId {
        let s = &self.state;
        let mut ids: Vec<CheckpointId> = s.pending_mails().to_vec();
        ids.extend(s.async_parts());
        ids.extend(s.write_results().iter().map(|(id, _)| *id));
        ids.extend(s.aborted_ids());
        let top = s.last_started().max(s.last_executed()).map_or(0, |c| c.0);
        ids.push(CheckpointId(top.saturating_add(1)));
        ids.push(CheckpointId(top.saturating_add(2)));
        ids.extend(s.last_started());
        ids.extend(s.last_executed());
        ids.push(CheckpointId(0));
        if p % 16 == 15 {
            ids.push(CheckpointId(u64::MAX));
        }
        pick(&ids, usize::from(p)).unwrap_or(CheckpointId(1))
    }

    fn fresh_handle(&mut self) -> StateHandle {
        let h = StateHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    /// Resolves an abstract action into an event.
    pub fn concretize(&mut self, action: &TaskAction) -> Option<TaskEvent> {
        Some(match action.clone() {
            TaskAction::Barrier { pick, netty } => TaskEvent::BarrierReceived {
                checkpoint: self.pick_checkpoint(pick),
                via: if netty { Thread::Netty } else { Thread::Task },
            },
            TaskAction::BarrierWrongThread { pick } => TaskEvent::BarrierReceived {
                checkpoint: self.pick_checkpoint(pick),
                via: if pick % 2 == 0 {
                    Thread::Writer
                } else {
                    Thread::Async
                },
            },
            TaskAction::Trigger { pick } => TaskEvent::TriggerCheckpoint {
                checkpoint: self.pick_checkpoint(pick),
            },
            TaskAction::RunOldestMail => TaskEvent::CheckpointMail {
                checkpoint: *self.state.pending_mails().first()?,
            },
            TaskAction::Mail { pick } => TaskEvent::CheckpointMail {
                checkpoint: self.pick_checkpoint(pick),
            },
            TaskAction::Cancel { pick } => TaskEvent::CancelMarker {
                checkpoint: self.pick_checkpoint(pick),
            },
            TaskAction::NotifyAborted { pick } => TaskEvent::NotifyAborted {
                checkpoint: self.pick_checkpoint(pick),
            },
            TaskAction::NotifyComplete { pick } => TaskEvent::NotifyComplete {
                checkpoint: self.pick_checkpoint(pick),
            },
            TaskAction::Writer { pick, fail } => {
                let checkpoint = self.pick_checkpoint(pick);
                if fail {
                    TaskEvent::WriterFailed { checkpoint }
                } else {
                    TaskEvent::WriterCompleted { checkpoint }
                }
            }
            TaskAction::Async { pick, fail } => {
                let checkpoint = self.pick_checkpoint(pick);
                if fail {
                    TaskEvent::AsyncPartFailed { checkpoint }
                } else {
                    TaskEvent::AsyncPartCompleted {
                        checkpoint,
                        handle: self.fresh_handle(),
                    }
                }
            }
            TaskAction::OperatorFailed => TaskEvent::OperatorFailed,
            TaskAction::EndOfInput => TaskEvent::EndOfInput,
            TaskAction::Recovery(n) => match n % 3 {
                0 => TaskEvent::RecoveryStarted {
                    channels: u32::from(n / 3 % 4),
                },
                1 => TaskEvent::ChannelRecovered,
                _ => TaskEvent::RecoveryFinished,
            },
            TaskAction::Close => TaskEvent::Close,
            TaskAction::Raw(ev) => match ev {
                TaskEvent::AsyncPartCompleted { checkpoint, .. } => TaskEvent::AsyncPartCompleted {
                    checkpoint,
                    handle: self.fresh_handle(),
                },
                other => other,
            },
        })
    }

    /// Runs one action.
    pub fn act(&mut self, action: &TaskAction) -> Result<(), Violation> {
        match self.concretize(action) {
            Some(ev) => self.deliver(ev),
            None => Ok(()),
        }
    }
}

/// Runs a story, checking every invariant after every step.
pub fn run(story: &TaskStory) -> Result<TaskDriver, Box<Failure>> {
    let mut d = TaskDriver::new(story.config()).map_err(|e| {
        Failure::at(
            0,
            Violation::new("valid-config", e.to_string()),
            Trace::default(),
        )
    })?;
    super::drive(&mut d, &story.actions, TaskDriver::act, TaskDriver::trace)?;
    Ok(d)
}
