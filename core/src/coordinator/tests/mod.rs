//! Unit tests (openraft-engine style): feed one event, assert the exact
//! effects and the exact outcome. Every step runs through [`H::step`], which
//! checks that the pure `reduce` and the in-place `apply` agree and that every
//! coordinator invariant (state, step, handle ledger) holds.
//!
//! Defaults (see [`settings`]): job 7, task 0 triggered, tasks 0 and 1
//! acknowledge and commit, interval 1 s, timeout 10 s, no pause, one
//! concurrent checkpoint, tolerable failures 5 (so `JobCommand::Fail` only
//! shows up in the tests about it), one retained checkpoint, queue bound 16.
//! Handles are `checkpoint * 100 + task`.

mod acks;
mod completion;
mod config;
mod durability;
mod finish;
mod invariants;
mod lifecycle;
mod mutants;
mod plan;
mod scheduling;
mod stop;
mod trigger;

use super::*;
use crate::invariants::checked::{self, Rigor};
use crate::invariants::coordinator::{check_state, check_step, names, HandleLedger};
use crate::invariants::Violation;
use crate::types::{
    AttemptNo, CheckpointId, DeclineReason, Generation, IoFailure, JobId, LegacyBug, Millis,
    Semantics, StateHandle, TaskId,
};

use crate::route::TaskMessage;
use CoordinatorEffect as E;

/// The generation of a coordinator that recovered nothing.
const G0: Generation = Generation(0);
use CoordinatorEvent as Ev;

const JOB: JobId = JobId(7);

fn t(n: u32) -> TaskId {
    TaskId(n)
}
fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}
fn ms(n: u64) -> Millis {
    Millis(n)
}
fn rq(n: u64) -> RequestId {
    RequestId(n)
}
fn hd(n: u64) -> StateHandle {
    StateHandle(n)
}
fn io() -> IoFailure {
    IoFailure("boom".into())
}

fn settings() -> CoordinatorSettings {
    CoordinatorSettings {
        tolerable_failures: 5,
        ..CoordinatorSettings::with_tasks(JOB, 2)
    }
}

// ----- events -----------------------------------------------------------------

fn user() -> TriggerKind {
    TriggerKind::Checkpoint { forced: false }
}
fn forced() -> TriggerKind {
    TriggerKind::Checkpoint { forced: true }
}
fn savepoint() -> TriggerKind {
    TriggerKind::Savepoint {
        target: "/sp".into(),
    }
}
fn trigger(kind: TriggerKind) -> Ev {
    Ev::Trigger { kind }
}
fn fire(timer: Timer) -> Ev {
    Ev::TimerFired { timer }
}
fn alloc(r: u64, id: u64) -> Ev {
    Ev::CheckpointIdAllocated {
        request: rq(r),
        result: Ok(cp(id)),
    }
}
fn alloc_err(r: u64) -> Ev {
    Ev::CheckpointIdAllocated {
        request: rq(r),
        result: Err(io()),
    }
}
fn hooks(id: u64, ok: bool) -> Ev {
    Ev::MasterHooksDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
fn ack_at(task: u32, attempt: u32, id: u64, handle: Option<u64>) -> Ev {
    Ev::Acknowledge {
        job: JOB,
        task: t(task),
        attempt: AttemptNo(attempt),
        checkpoint: cp(id),
        state: handle.map(hd),
    }
}
fn ack(task: u32, id: u64, handle: u64) -> Ev {
    ack_at(task, 0, id, Some(handle))
}
fn decline_at(task: u32, attempt: u32, id: u64, reason: DeclineReason) -> Ev {
    Ev::Decline {
        job: JOB,
        task: t(task),
        attempt: AttemptNo(attempt),
        checkpoint: cp(id),
        reason,
    }
}
fn decline(task: u32, id: u64) -> Ev {
    decline_at(task, 0, id, DeclineReason::SnapshotFailed)
}
fn fin(id: u64, ok: bool) -> Ev {
    Ev::FinalizeDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
fn store(id: u64, ok: bool) -> Ev {
    Ev::StoreDone {
        checkpoint: cp(id),
        result: if ok { Ok(()) } else { Err(io()) },
    }
}
/// `Restore { Latest }`, without asking for an error when there is none.
fn restore_latest() -> Ev {
    Ev::Restore {
        source: RestoreSource::Latest {
            error_if_none: false,
        },
    }
}
fn failed(task: u32, attempt: u32) -> Ev {
    Ev::TaskFailed {
        task: t(task),
        attempt: AttemptNo(attempt),
    }
}
fn running(task: u32, attempt: u32) -> Ev {
    Ev::TaskRunning {
        task: t(task),
        attempt: AttemptNo(attempt),
    }
}

// ----- effects ----------------------------------------------------------------

fn sched(timer: Timer, at: u64) -> E {
    E::Timer {
        timer,
        at: Some(ms(at)),
    }
}
fn cancel(timer: Timer) -> E {
    E::Timer { timer, at: None }
}
fn e_alloc(r: u64) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::AllocateId { request: rq(r) },
    }
}
fn e_trig(task: u32, attempt: u32, id: u64, ts: u64, options: CheckpointOptions) -> E {
    E::Rpc {
        task: t(task),
        attempt: AttemptNo(attempt),
        generation: G0,
        message: TaskMessage::Trigger {
            checkpoint: cp(id),
            timestamp: ms(ts),
            options,
        },
    }
}
fn e_full(id: u64, ts: u64) -> E {
    e_trig(0, 0, id, ts, CheckpointOptions::FullCheckpoint)
}
fn e_finalize_kind(id: u64, kind: TriggerKind, ts: u64, externalized: bool, handles: &[u64]) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::Finalize {
            checkpoint: cp(id),
            kind,
            timestamp: ms(ts),
            externalized,
            handles: handles.iter().copied().map(hd).collect(),
        },
    }
}
fn e_store(id: u64) -> E {
    E::Io {
        generation: G0,
        request: IoRequest::Store { checkpoint: cp(id) },
    }
}
fn e_discard(id: u64, handle: u64) -> E {
    E::Discard {
        generation: G0,
        checkpoint: cp(id),
        handle: hd(handle),
    }
}
fn e_done(task: u32, id: u64, ts: u64) -> E {
    E::Rpc {
        task: t(task),
        attempt: AttemptNo(0),
        generation: G0,
        message: TaskMessage::NotifyComplete {
            checkpoint: cp(id),
            timestamp: ms(ts),
        },
    }
}
fn e_completed(id: u64, r: u64, savepoint: bool) -> E {
    E::Report(Report::Completed {
        checkpoint: cp(id),
        request: rq(r),
        savepoint,
    })
}
fn e_aborted(id: u64, r: u64, reason: AbortReason) -> E {
    E::Report(Report::Aborted {
        checkpoint: cp(id),
        request: rq(r),
        reason,
    })
}
fn e_failed(r: u64, reason: AbortReason) -> E {
    E::Report(Report::RequestFailed {
        request: rq(r),
        reason,
    })
}
fn applied(a: Applied) -> Outcome {
    Outcome::Applied(a)
}
fn ignored(i: Ignored) -> Outcome {
    Outcome::Ignored(i)
}

// ----- harness ----------------------------------------------------------------

/// The coordinator under test plus the handle ledger.
struct H {
    s: CoordinatorState,
    ledger: HandleLedger,
}

impl H {
    /// The notify-aborted RPC `task` gets when pending checkpoint `id` is
    /// aborted: it carries the checkpoint's trigger timestamp, read from
    /// the state before the event (`notify_aborted_carries_the_trigger_timestamp`
    /// pins the value itself).
    fn nab(&self, task: u32, id: u64, latest: Option<u64>) -> E {
        let timestamp = self
            .s
            .pending()
            .find(|p| p.id() == cp(id))
            .map(|p| p.timestamp())
            .unwrap_or_else(|| panic!("checkpoint {id} is not pending"));
        E::Rpc {
            task: t(task),
            attempt: AttemptNo(0),
            generation: G0,
            message: TaskMessage::NotifyAborted {
                checkpoint: cp(id),
                latest_completed: latest.map(cp),
                timestamp,
            },
        }
    }

    /// A pending checkpoint's abort as the host sees it: the report, then
    /// the notify-aborted RPC to both tasks.
    fn aborted_notified(
        &self,
        id: u64,
        r: u64,
        reason: AbortReason,
        latest: Option<u64>,
    ) -> Vec<E> {
        vec![
            e_aborted(id, r, reason),
            self.nab(0, id, latest),
            self.nab(1, id, latest),
        ]
    }

    fn new() -> H {
        H::with(settings())
    }

    /// The finalize of pending checkpoint `id`, with the kind and trigger
    /// time it was created with (the tests of those fields spell them out).
    fn e_finalize(&self, id: u64, externalized: bool, handles: &[u64]) -> E {
        let p = self
            .s
            .pending_checkpoint(cp(id))
            .expect("finalized checkpoints are pending");
        e_finalize_kind(id, p.kind().clone(), p.timestamp().0, externalized, handles)
    }

    fn with(settings: CoordinatorSettings) -> H {
        H {
            s: CoordinatorState::from_settings(settings).expect("valid settings"),
            ledger: HandleLedger::new(),
        }
    }

    /// Runs one event through the shared checked step (determinism, pure
    /// equals in place, every invariant) and keeps the new state.
    fn step(&mut self, now: u64, ev: Ev) -> Step {
        let mut ledger_in_place = self.ledger.clone();
        let (t, verdict) =
            checked::coordinator_step(&mut self.ledger, &self.s, ms(now), &ev, Rigor::Full);
        // The in-place checked step agrees on every step of every test here
        // (the same step, verdict, state after and ledger after).
        let mut in_place = self.s.clone();
        let (step, verdict_in_place) = checked::coordinator_step_in_place(
            &mut ledger_in_place,
            &mut in_place,
            ms(now),
            &ev,
            Rigor::Full,
        );
        assert_eq!((&step, &verdict_in_place), (&t.step, &verdict), "{ev:?}");
        assert!(in_place == t.state, "{ev:?}");
        if verdict.is_ok() {
            assert_eq!(ledger_in_place, self.ledger, "{ev:?}");
        }
        if let Err(v) = verdict {
            panic!("{v}\n event: {ev:?}\n step: {:?}", t.step);
        }
        self.s = t.state;
        t.step
    }

    /// One event; asserts the exact effects and outcome.
    fn expect(&mut self, now: u64, ev: Ev, effects: Vec<E>, outcome: Outcome) {
        let step = self.step(now, ev);
        assert_eq!(step.effects, effects, "effects");
        assert_eq!(step.outcome, outcome, "outcome");
        assert_eq!(step.clock, Clock::Monotonic, "clock");
    }

    /// Triggers a checkpoint of `kind` at `now` and allocates `id` for it;
    /// returns the request id.
    fn pending(&mut self, now: u64, kind: TriggerKind, id: u64) -> u64 {
        let r = self.s.cold.next_request;
        let step = self.step(now, trigger(kind));
        assert_eq!(
            step.outcome,
            applied(Applied::AllocatingId { request: rq(r) })
        );
        let step = self.step(now, alloc(r, id));
        assert_eq!(
            step.outcome,
            applied(Applied::CheckpointTriggered {
                request: rq(r),
                checkpoint: cp(id),
            })
        );
        r
    }

    fn user_cp(&mut self, now: u64, id: u64) -> u64 {
        self.pending(now, user(), id)
    }

    /// Every task to wait for acks `id` (handle `id * 100 + task`).
    fn ack_all(&mut self, now: u64, id: u64) {
        let wait: Vec<TaskId> = self.s.config().tasks_to_wait().to_vec();
        for task in wait {
            self.step(now, ack(task.0, id, id * 100 + u64::from(task.0)));
        }
    }

    /// Acks, finalizes and stores `id`.
    fn complete(&mut self, now: u64, id: u64) -> Step {
        self.ack_all(now, id);
        self.step(now, fin(id, true));
        let step = self.step(now, store(id, true));
        assert_eq!(
            step.outcome,
            applied(Applied::Completed { checkpoint: cp(id) })
        );
        step
    }

    fn queued_ids(&self) -> Vec<RequestId> {
        self.s.queued().map(Request::id).collect()
    }
}

fn config_err(f: impl FnOnce(&mut CoordinatorSettings)) -> ConfigError {
    let mut s = settings();
    f(&mut s);
    CoordinatorConfig::new(s).expect_err("config must be refused")
}

fn config_ok(f: impl FnOnce(&mut CoordinatorSettings)) -> CoordinatorConfig {
    let mut s = settings();
    f(&mut s);
    CoordinatorConfig::new(s).expect("config must be accepted")
}
