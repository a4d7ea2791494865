//! The thread-safe task host.

use std::collections::VecDeque;

use super::lock;
use crate::sync::Mutex;
use crate::task::{reduce, Outcome, Step, TaskEffect, TaskEvent, TaskState};
use crate::types::Millis;

/// One applied step, as the sink sees it (under the host's lock).
#[derive(Clone, Copy, Debug)]
pub struct TaskStep<'a> {
    /// The time the caller passed.
    pub now: Millis,
    /// Whether the event came out of the mailbox (task thread) rather than
    /// from [`TaskHost::deliver`].
    pub from_mailbox: bool,
    /// The event.
    pub event: &'a TaskEvent,
    /// The state before the event.
    pub before: &'a TaskState,
    /// The effects, in the order they must be carried out (a
    /// [`TaskEffect::Mail`] is listed for completeness; the host has
    /// already enqueued its mail), and the outcome.
    pub step: &'a Step,
    /// The state after the event.
    pub after: &'a TaskState,
}

/// Receives every step of a [`TaskHost`], in reducer order, while the host's
/// lock is held. Must not call back into the host. Closures
/// `FnMut(&TaskStep<'_>)` are sinks.
pub trait TaskEffectSink {
    /// Carry out (or hand off) `step.effects`, in order.
    fn on_step(&mut self, step: &TaskStep<'_>);
}

impl<F: FnMut(&TaskStep<'_>)> TaskEffectSink for F {
    fn on_step(&mut self, step: &TaskStep<'_>) {
        self(step);
    }
}

struct Inner<S> {
    state: TaskState,
    mailbox: VecDeque<TaskEvent>,
    sink: S,
}

/// A subtask's checkpoint side shared by the netty, task, writer, async and
/// RPC threads. See the [module docs](super).
pub struct TaskHost<S> {
    inner: Mutex<Inner<S>>,
}

impl<S: TaskEffectSink> TaskHost<S> {
    /// A host around `state` (usually [`TaskState::new`]) with an empty
    /// mailbox.
    pub fn new(state: TaskState, sink: S) -> Self {
        TaskHost {
            inner: Mutex::new(Inner {
                state,
                mailbox: VecDeque::new(),
                sink,
            }),
        }
    }

    /// Applies `event` now, on the calling thread: barriers (netty, or the
    /// task thread for local channels), writer and async-part completions,
    /// and the task thread's own inputs (cancel markers, operator failure,
    /// close). RPC notifications belong in [`TaskHost::enqueue`].
    pub fn deliver(&self, now: Millis, event: TaskEvent) -> Outcome {
        let mut g = lock(&self.inner);
        step(&mut g, now, event, false)
    }

    /// Puts `mail` at the back of the mailbox (an RPC thread: notify-aborted,
    /// notify-complete, trigger). It is applied later by the task thread in
    /// [`TaskHost::run_mailbox_once`] and cannot be withdrawn.
    pub fn enqueue(&self, mail: TaskEvent) {
        lock(&self.inner).mailbox.push_back(mail);
    }

    /// The task thread's mailbox step: applies the oldest entry and returns
    /// `true`, or returns `false` when the mailbox is empty.
    pub fn run_mailbox_once(&self, now: Millis) -> bool {
        let mut g = lock(&self.inner);
        match g.mailbox.pop_front() {
            Some(mail) => {
                step(&mut g, now, mail, true);
                true
            }
            None => false,
        }
    }

    /// Entries waiting in the mailbox.
    pub fn mailbox_len(&self) -> usize {
        lock(&self.inner).mailbox.len()
    }

    /// A snapshot of the reducer state (cheap: persistent collections).
    pub fn state(&self) -> TaskState {
        lock(&self.inner).state.clone()
    }

    /// Runs `f` on the sink under the lock (to read what it collected, or to
    /// take queued work out of it).
    pub fn with_sink<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        f(&mut lock(&self.inner).sink)
    }

    /// The state, the mailbox entries not run, and the sink.
    pub fn into_parts(self) -> (TaskState, Vec<TaskEvent>, S) {
        let inner = self
            .inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (inner.state, inner.mailbox.into(), inner.sink)
    }
}

fn step<S: TaskEffectSink>(
    inner: &mut Inner<S>,
    now: Millis,
    event: TaskEvent,
    from_mailbox: bool,
) -> Outcome {
    let t = reduce(&inner.state, now, event.clone());
    let before = std::mem::replace(&mut inner.state, t.state);
    for e in &t.step.effects {
        if let TaskEffect::Mail(checkpoint) = e {
            inner.mailbox.push_back(TaskEvent::CheckpointMail {
                checkpoint: *checkpoint,
            });
        }
    }
    inner.sink.on_step(&TaskStep {
        now,
        from_mailbox,
        event: &event,
        before: &before,
        step: &t.step,
        after: &inner.state,
    });
    t.step.outcome
}
