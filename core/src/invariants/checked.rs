//! The checked step: one event through one machine with every proof
//! obligation, written once for every layer (unit tests, scenario and
//! property stories, the model's world, fuzz targets, trace replay).
//!
//! [`coordinator_step`], [`task_step`] and [`files_step`] run the pure reducer and check its
//! result. With [`Rigor::Full`] they also run the in-place `apply` on a copy
//! of the state before: it must agree with `reduce` on the state, effects,
//! outcome and clock ([`DETERMINISTIC`]). For the coordinator that second
//! run is [`CoordinatorState::apply_into`] with a lent queue that already
//! holds an effect: the step's effects must come after it, the queued one
//! untouched (what a host that keeps one queue relies on). `reduce` is
//! `clone` + the in-place body that `apply` and `apply_into` share, so
//! this one second run checks both that the reducer is deterministic (two
//! runs from equal states agree: no hidden input such as a clock, an RNG or
//! a randomly seeded hash order) and that pure equals in place (a host that
//! keeps one state and applies events to it sees what `reduce` returns). It
//! used to be two extra runs (`reduce` again, then `apply`), which ran the
//! same code twice for one verdict; the fuzz targets spent a fifth of their
//! time there. [`Rigor::Invariants`] skips the second run (the model
//! checker, which explores millions of steps, uses it and leaves
//! determinism to the other layers).
//!
//! All three return the transition *and* the verdict, so a caller can keep the
//! state it reached, log the step and then stop on the violation.
//! [`task_step_in_place`] is [`task_step`] for a host that changes its
//! task state in place: given a copy it already holds of the state before
//! (the model checker's copy-on-write world), the event is applied to the
//! state, not to another copy; given none (a fuzz target's story), the pure
//! run comes first and the in-place run, made last, changes the state, so
//! a step with [`Rigor::Full`] copies it once, not twice.
//! [`coordinator_step_in_place`] is [`coordinator_step`] for a host that
//! keeps one coordinator state and changes it (the fuzz targets' stories
//! and the simulator's world), in the second way: a step with
//! [`Rigor::Full`] copies the state's cold part once, not twice.

use super::coordinator::{check_all as check_coordinator, HandleLedger};
use super::files::check_state as check_files;
use super::task::{check_all as check_task, check_quiescent, TaskMonitor};
use super::Violation;
use crate::coordinator::{self, CoordinatorEffect, CoordinatorEvent, CoordinatorState, Timer};
use crate::files::{self, FilesEvent, FilesState};
use crate::task::{self, TaskEvent, TaskState};
use crate::types::Millis;

/// Name of the check that `reduce` and `apply` on the same state (a copy
/// of it, or the caller's own in the in-place forms) agree (determinism and
/// pure-equals-in-place, one check: see the module docs).
pub const DETERMINISTIC: &str = "deterministic";

/// The effect a full-rigor coordinator step finds already queued in the
/// queue it lends to `apply_into` (any effect would do; this one names no
/// checkpoint any step makes).
const QUEUED: CoordinatorEffect = CoordinatorEffect::Timer {
    timer: Timer::Periodic,
    at: Some(Millis(u64::MAX)),
};

/// How much a checked step verifies besides the invariants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rigor {
    /// The shared invariants only.
    Invariants,
    /// The invariants, and `apply` on the same state (a copy, or the
    /// caller's own in the in-place forms) must agree with `reduce`
    /// (determinism and pure-equals-in-place).
    Full,
}

/// One coordinator event, checked: returns the transition and the first
/// violation (state, step and ledger invariants; with [`Rigor::Full`] also
/// determinism and pure-equals-in-place). The ledger has observed the step
/// when the verdict is `Ok`.
pub fn coordinator_step(
    ledger: &mut HandleLedger,
    before: &CoordinatorState,
    now: Millis,
    event: &CoordinatorEvent,
    rigor: Rigor,
) -> (coordinator::Transition, Result<(), Violation>) {
    let t = coordinator::reduce(before, now, event.clone());
    let verdict = match rigor {
        Rigor::Invariants => Ok(()),
        Rigor::Full => {
            let mut in_place = before.clone();
            apply_agrees(&mut in_place, now, event, &t)
        }
    };
    let verdict =
        verdict.and_then(|()| check_coordinator(ledger, before, event, &t.step, &t.state));
    (t, verdict)
}

/// [`coordinator_step`] for a host that keeps one state and changes it (a
/// fuzz target's story, the simulator's world): `state` is the state before
/// the event and holds the state after it on return; the step and the
/// verdict are those [`coordinator_step`] returns (with one difference: the
/// invariants are checked, and the ledger told, even when the determinism
/// check failed first; the verdict is that first violation either way).
///
/// The same checks in another order: `reduce` on `state`, the invariants
/// against `state` as it was, and then, with [`Rigor::Full`], the in-place
/// run (`apply_into` with a lent queue that already holds an effect) on
/// `state` itself, which must agree with `reduce`. Run last, the in-place
/// run writes the caller's own copy of the state's cold part (the
/// configuration, timers, tasks, queue and retained checkpoints, behind one
/// pointer; written without a copy when nothing else holds it, as in the
/// world and the fuzz targets' stories, which keep no other copy of the
/// state) where [`coordinator_step`] applies to a second copy of the
/// state, whose cold part, shared with the state before, is copied again
/// on a step that writes it: with [`Rigor::Full`] a step that writes it
/// copies it once (the pure run's copy; the parts inside it are copied only
/// where written) instead of twice, and the caller keeps no second state.
/// With [`Rigor::Invariants`] `state` becomes `reduce`'s state. After a
/// [`DETERMINISTIC`] violation `state` holds the in-place run's state.
pub fn coordinator_step_in_place(
    ledger: &mut HandleLedger,
    state: &mut CoordinatorState,
    now: Millis,
    event: &CoordinatorEvent,
    rigor: Rigor,
) -> (coordinator::Step, Result<(), Violation>) {
    let t = coordinator::reduce(state, now, event.clone());
    let checked = check_coordinator(ledger, state, event, &t.step, &t.state);
    match rigor {
        Rigor::Invariants => {
            *state = t.state;
            (t.step, checked)
        }
        Rigor::Full => {
            let agrees = apply_agrees(state, now, event, &t);
            (t.step, agrees.and(checked))
        }
    }
}

/// The full-rigor run of a coordinator step, for both checked forms:
/// `event` applied in place to `state` (equal to the state `reduce` ran
/// on) with `apply_into` and a lent queue that already holds [`QUEUED`];
/// it must agree with `reduce`'s transition `t`: the same state, outcome
/// and clock, the queued effect untouched and the step's effects after it.
fn apply_agrees(
    state: &mut CoordinatorState,
    now: Millis,
    event: &CoordinatorEvent,
    t: &coordinator::Transition,
) -> Result<(), Violation> {
    // Room for the queued effect and the step's (one allocation, as
    // `apply`'s own list had; this runs on every fuzzed event).
    let mut queue = Vec::with_capacity(1 + t.step.effects.len());
    queue.push(QUEUED);
    let (outcome, clock) = state.apply_into(now, event.clone(), &mut queue);
    verify(
        event,
        *state == t.state
            && outcome == t.step.outcome
            && clock == t.step.clock
            && queue.split_first() == Some((&QUEUED, &t.step.effects[..])),
    )
}

/// One task event, checked: returns the transition and the first violation
/// (state invariants, the monitor's cross-step rules, quiescence; with
/// [`Rigor::Full`] also determinism and pure-equals-in-place).
pub fn task_step(
    monitor: &mut TaskMonitor,
    before: &TaskState,
    now: Millis,
    event: &TaskEvent,
    rigor: Rigor,
) -> (task::Transition, Result<(), Violation>) {
    let t = task::reduce(before, now, event.clone());
    let verdict = match rigor {
        Rigor::Invariants => Ok(()),
        Rigor::Full => {
            let mut in_place = before.clone();
            let step = in_place.apply(now, event.clone());
            verify(event, (&in_place, &step) == (&t.state, &t.step))
        }
    };
    let verdict = verdict
        .and_then(|()| check_task(monitor, before, event, &t.step, &t.state))
        .and_then(|()| check_quiescent(&t.state));
    (t, verdict)
}

/// [`task_step`] for a host that changes its task state in place: `state`
/// holds the state after the event on return; the step and the verdict are
/// those [`task_step`] returns for the state before (with one difference
/// when `before` is `None`: the invariants are checked, and the monitor
/// told, even when the determinism check failed first; the verdict is that
/// first violation either way).
///
/// * **`before: Some(b)`**, a copy-on-write host that already holds a copy
///   of the state it is about to change (the model checker's world: `state`
///   is a fresh copy of `b`, which must be equal to it): the event is
///   applied to `state` in place instead of to another copy; the invariants
///   are checked against `b`, and with [`Rigor::Full`] `reduce` on `b` must
///   agree with the in-place result. A `state` that is not a copy of `b` is
///   the caller's mistake and is not looked for (comparing them would cost
///   the copy this function saves); with [`Rigor::Full`] it shows up as
///   that disagreement unless the event overwrites the difference.
/// * **`before: None`**, a host that keeps one state (a fuzz target's
///   story): `reduce` on `state`, the invariants against `state` as it was,
///   and then, with [`Rigor::Full`], the in-place run on `state` itself,
///   which must agree with `reduce` (so a step with [`Rigor::Full`] copies
///   the state once, for the pure run, where keeping the state before for
///   the checks and applying to `state` would copy it twice). With
///   [`Rigor::Invariants`] `state` becomes `reduce`'s state (one copy
///   either way). After a [`DETERMINISTIC`] violation
///   `state` holds the in-place run's state.
pub fn task_step_in_place(
    monitor: &mut TaskMonitor,
    before: Option<&TaskState>,
    state: &mut TaskState,
    now: Millis,
    event: &TaskEvent,
    rigor: Rigor,
) -> (task::Step, Result<(), Violation>) {
    let Some(before) = before else {
        let t = task::reduce(state, now, event.clone());
        let checked = check_task(monitor, state, event, &t.step, &t.state)
            .and_then(|()| check_quiescent(&t.state));
        return match rigor {
            Rigor::Invariants => {
                *state = t.state;
                (t.step, checked)
            }
            Rigor::Full => {
                let step = state.apply(now, event.clone());
                let agrees = verify(event, (&*state, &step) == (&t.state, &t.step));
                (t.step, agrees.and(checked))
            }
        };
    };
    let step = state.apply(now, event.clone());
    let verdict = match rigor {
        Rigor::Invariants => Ok(()),
        Rigor::Full => {
            let t = task::reduce(before, now, event.clone());
            verify(event, (&*state, &step) == (&t.state, &t.step))
        }
    };
    let verdict = verdict
        .and_then(|()| check_task(monitor, before, event, &step, state))
        .and_then(|()| check_quiescent(state));
    (step, verdict)
}

/// One event of the file-merging manager ([`crate::files`]), checked:
/// returns the transition and the first violation (a file deleted while a
/// segment in it other than the one released is referenced, an `Ignored`
/// event that changed something, the manager's state invariant
/// [`super::files::check_state`]; with [`Rigor::Full`] also determinism
/// and pure-equals-in-place).
pub fn files_step(
    before: &FilesState,
    event: &FilesEvent,
    rigor: Rigor,
) -> (files::Transition, Result<(), Violation>) {
    let t = files::reduce(before, event.clone());
    let verdict = match rigor {
        Rigor::Invariants => Ok(()),
        Rigor::Full => {
            let mut in_place = before.clone();
            let step = in_place.apply(event.clone());
            verify(event, (&in_place, &step) == (&t.state, &t.step))
        }
    };
    let unchanged = match t.step.outcome {
        files::Outcome::Applied(_) => true,
        files::Outcome::Ignored(_) => t.state == *before && t.step.effects.is_empty(),
    };
    let verdict = verdict
        .and_then(|()| {
            if unchanged {
                Ok(())
            } else {
                Err(Violation::new(
                    super::files::names::REFS_MATCH_SEGMENTS,
                    format!("{event:?} was ignored but changed the manager"),
                ))
            }
        })
        .and_then(|()| deletes_unreferenced(before, event, &t.step.effects))
        .and_then(|()| check_files(&t.state));
    (t, verdict)
}

/// Every file a files step deletes had no referenced segment left but
/// the one the event released.
fn deletes_unreferenced(
    before: &FilesState,
    event: &FilesEvent,
    effects: &[files::FilesEffect],
) -> Result<(), Violation> {
    let released = match event {
        FilesEvent::Discard { handle } => Some(*handle),
        FilesEvent::SegmentWritten { .. } | FilesEvent::Restored => None,
    };
    for e in effects {
        match e {
            files::FilesEffect::Delete { file } => {
                let left: Vec<_> = before
                    .referenced(*file)
                    .into_iter()
                    .filter(|h| Some(*h) != released)
                    .collect();
                if !left.is_empty() {
                    return Err(Violation::new(
                        super::files::names::FILE_DELETED_ONCE,
                        format!("{file} deleted on {event:?} while its segments {left:?} are referenced"),
                    ));
                }
            }
            files::FilesEffect::Append { .. } => {}
        }
    }
    Ok(())
}

/// The verdict of the [`Rigor::Full`] check of one event.
fn verify(event: &dyn core::fmt::Debug, agrees: bool) -> Result<(), Violation> {
    if agrees {
        Ok(())
    } else {
        Err(Violation::new(
            DETERMINISTIC,
            format!("reduce and apply on the same state disagree on {event:?}"),
        ))
    }
}
