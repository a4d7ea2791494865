//! The thread-safe coordinator host.

use super::lock;
use crate::coordinator::{CoordinatorEvent, CoordinatorState, Outcome, Step};
use crate::sync::Mutex;
use crate::types::Millis;

/// One step, as the sink sees it (under the host's lock). `step` is what
/// [`CoordinatorState::apply`] returned; together with `before` and `after`
/// it is exactly what [`crate::invariants::coordinator::check_all`] takes.
#[derive(Clone, Copy, Debug)]
pub struct CoordinatorStep<'a> {
    /// The time the caller passed (the reducer clamps a `now` that went
    /// backwards and says so in `step.clock`).
    pub now: Millis,
    /// The event.
    pub event: &'a CoordinatorEvent,
    /// The state before the event.
    pub before: &'a CoordinatorState,
    /// Effects (in order), outcome and clock.
    pub step: &'a Step,
    /// The state after the event.
    pub after: &'a CoordinatorState,
}

/// Receives every step of a [`CoordinatorHost`], in reducer order, while the
/// host's lock is held. Must not call back into the host. Closures
/// `FnMut(&CoordinatorStep<'_>)` are sinks.
pub trait CoordinatorEffectSink {
    /// Carry out (or hand off) `step.step.effects`, in order.
    fn on_step(&mut self, step: &CoordinatorStep<'_>);
}

impl<F: FnMut(&CoordinatorStep<'_>)> CoordinatorEffectSink for F {
    fn on_step(&mut self, step: &CoordinatorStep<'_>) {
        self(step);
    }
}

struct Inner<S> {
    state: CoordinatorState,
    sink: S,
}

/// A coordinator shared by RPC threads (acks, declines, task status), the
/// timer thread (timeouts, periodic triggers), the I/O completion path (id
/// allocation, hooks, finalize, store) and the job's control calls (trigger,
/// shutdown). See the [module docs](super).
pub struct CoordinatorHost<S> {
    inner: Mutex<Inner<S>>,
}

impl<S: CoordinatorEffectSink> CoordinatorHost<S> {
    /// A host around `state`.
    pub fn new(state: CoordinatorState, sink: S) -> Self {
        CoordinatorHost {
            inner: Mutex::new(Inner { state, sink }),
        }
    }

    /// Applies `event` under the lock and hands the step to the sink. Any
    /// thread may call it; calls are serialised.
    pub fn deliver(&self, now: Millis, event: CoordinatorEvent) -> Outcome {
        let mut g = lock(&self.inner);
        let inner = &mut *g;
        let before = inner.state.clone();
        let step = inner.state.apply(now, event.clone());
        inner.sink.on_step(&CoordinatorStep {
            now,
            event: &event,
            before: &before,
            step: &step,
            after: &inner.state,
        });
        step.outcome
    }

    /// A snapshot of the reducer state (cheap: persistent collections).
    pub fn state(&self) -> CoordinatorState {
        lock(&self.inner).state.clone()
    }

    /// Runs `f` on the sink under the lock.
    pub fn with_sink<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        f(&mut lock(&self.inner).sink)
    }

    /// The state and the sink.
    pub fn into_parts(self) -> (CoordinatorState, S) {
        let inner = self
            .inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (inner.state, inner.sink)
    }
}
