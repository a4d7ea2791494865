//! Persisting the reducers' states (`ckpt_core::snapshot`): a serde round
//! trip gives an equal state (same hash, same answers to the next event)
//! for every state of the coordinator and task stories and of a small model
//! world with failovers; a damaged snapshot is a typed error; and no
//! snapshot, however damaged, becomes a state that breaks an invariant or
//! makes the reducers panic.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use arbitrary::{Arbitrary, Unstructured};
use ckpt_core::coordinator::CoordinatorEffect;
use ckpt_core::coordinator::IoAnswer;
use ckpt_core::coordinator::{
    self, CoordinatorEvent, CoordinatorSettings, CoordinatorState, PendingPhase, Timer, TriggerKind,
};
use ckpt_core::invariants;
use ckpt_core::route::TaskMessage;
use ckpt_core::route::ToCoordinator;
use ckpt_core::snapshot::{
    CoordinatorSnapshot, Corruption, SnapshotError, TaskSnapshot, SNAPSHOT_VERSION,
};
use ckpt_core::task::{self as task_api, Semantics, TaskConfig, TaskEvent, TaskState};
use ckpt_core::{AttemptNo, CheckpointId, JobId, Millis, StateHandle, Thread};
use ckpt_model::world::{ModelConfig, Sim, World};
use ckpt_tests::stories::coordinator::{self as coord_stories, CoordStory};
use ckpt_tests::stories::task::{self as task_stories, TaskStory};
use proptest::prelude::*;
use serde_json::Value;

fn hash_of<T: Hash>(t: &T) -> u64 {
    let mut h = DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// JSON out and back: an equal state, an equal hash, the same bytes again.
fn coordinator_round_trip(s: &CoordinatorState) -> Result<CoordinatorState, String> {
    let json = serde_json::to_string(s).map_err(|e| e.to_string())?;
    let back: CoordinatorState =
        serde_json::from_str(&json).map_err(|e| format!("{e}\nin {json}"))?;
    if &back != s {
        return Err(format!("round trip changed the state:\n{s:?}\n{back:?}"));
    }
    if hash_of(&back) != hash_of(s) {
        return Err("round trip changed the hash".into());
    }
    let again = serde_json::to_string(&back).map_err(|e| e.to_string())?;
    if again != json {
        return Err("round trip changed the serialized form".into());
    }
    Ok(back)
}

fn task_round_trip(s: &TaskState) -> Result<TaskState, String> {
    let json = serde_json::to_string(s).map_err(|e| e.to_string())?;
    let back: TaskState = serde_json::from_str(&json).map_err(|e| format!("{e}\nin {json}"))?;
    if &back != s || hash_of(&back) != hash_of(s) {
        return Err(format!("round trip changed the state:\n{s:?}\n{back:?}"));
    }
    Ok(back)
}

fn config(cases: u32) -> ProptestConfig {
    ckpt_tests::strategies::config(cases, "proptest-regressions/snapshot.txt")
}

/// A story decoded from random bytes (the fuzz targets' decoding).
fn decode<T: for<'a> Arbitrary<'a>>(bytes: &[u8]) -> Option<T> {
    T::arbitrary(&mut Unstructured::new(bytes)).ok()
}

proptest! {
    #![proptest_config(config(256))]

    /// Every state a coordinator story passes through reads back equal, and
    /// the copy answers the story's next event exactly like the original.
    #[test]
    fn coordinator_story_states_round_trip(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let Some(story) = decode::<CoordStory>(&bytes) else { return Ok(()) };
        let Ok(d) = coord_stories::run(&story) else { return Ok(()) };
        for pair in d.records.windows(2) {
            let [before, next] = pair else { continue };
            let copy = coordinator_round_trip(&before.state).map_err(TestCaseError::fail)?;
            let t = coordinator::reduce(&copy, next.now, next.event.clone());
            prop_assert_eq!(&t.step.effects, &next.effects);
            prop_assert_eq!(&t.step.outcome, &next.outcome);
            prop_assert_eq!(&t.state, &next.state);
        }
        if let Some(last) = d.records.last() {
            coordinator_round_trip(&last.state).map_err(TestCaseError::fail)?;
        }
    }

    /// Every state a (fixed-semantics) task story passes through reads back
    /// equal and answers the next event alike.
    #[test]
    fn task_story_states_round_trip(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        let Some(mut story) = decode::<TaskStory>(&bytes) else { return Ok(()) };
        story.semantics = Semantics::Fixed;
        let Ok(d) = task_stories::run(&story) else { return Ok(()) };
        for pair in d.records.windows(2) {
            let [before, next] = pair else { continue };
            let copy = task_round_trip(&before.state).map_err(TestCaseError::fail)?;
            let t = task_api::reduce(&copy, Millis(0), next.event.clone());
            prop_assert_eq!(&t.step.effects, &next.effects);
            prop_assert_eq!(&t.step.outcome, &next.outcome);
            prop_assert_eq!(&t.state, &next.state);
        }
    }

    /// Damage one value of a rich coordinator snapshot anywhere: the result
    /// is refused, or it is a state that satisfies every invariant and that
    /// the reducer drives (every timer, ack, answer and failure it could
    /// get) without a panic or a broken invariant.
    #[test]
    fn damaged_coordinator_snapshots_are_refused_or_sound(
        which in any::<usize>(), value in 0usize..VALUES.len(), base in 0usize..4,
    ) {
        let states = rich_coordinators();
        let Some(s) = states.get(base % states.len()) else { return Ok(()) };
        let mut v = serde_json::to_value(s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        if !damage(&mut v, which, value) { return Ok(()) }
        if let Ok(state) = serde_json::from_value::<CoordinatorState>(v) {
            drive_coordinator(state).map_err(TestCaseError::fail)?;
        }
    }

    /// The same for task snapshots.
    #[test]
    fn damaged_task_snapshots_are_refused_or_sound(
        which in any::<usize>(), value in 0usize..VALUES.len(), base in 0usize..4,
    ) {
        let states = rich_tasks();
        let Some(s) = states.get(base % states.len()) else { return Ok(()) };
        let mut v = serde_json::to_value(s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        if !damage(&mut v, which, value) { return Ok(()) }
        if let Ok(state) = serde_json::from_value::<TaskState>(v) {
            drive_task(state).map_err(TestCaseError::fail)?;
        }
    }
}

/// Every single damage, not a random sample: each scalar of each rich
/// coordinator and task snapshot replaced by each of [`VALUES`]. The result
/// is refused, or it is sound under every event it could get next.
#[test]
fn every_single_damage_of_a_rich_snapshot_is_refused_or_sound() {
    /// (tried, accepted) over every single damage of `states`.
    fn sweep<S: serde::Serialize + serde::de::DeserializeOwned>(
        states: Vec<S>,
        drive: fn(S) -> Result<(), String>,
    ) -> (usize, usize) {
        fn scalars(v: &Value) -> usize {
            match v {
                Value::Array(a) => a.iter().map(scalars).sum(),
                Value::Object(o) => o.values().map(scalars).sum(),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 1,
            }
        }
        let (mut tried, mut accepted) = (0, 0);
        for s in states {
            let good = serde_json::to_value(&s).unwrap_or_default();
            for which in 0..scalars(&good) {
                for (value, make) in VALUES.iter().enumerate() {
                    let mut v = good.clone();
                    assert!(damage(&mut v, which, value));
                    tried += 1;
                    if let Ok(state) = serde_json::from_value::<S>(v.clone()) {
                        accepted += 1;
                        if let Err(e) = drive(state) {
                            panic!("scalar {which} := {}: {e}\nin {v}", make());
                        }
                    }
                }
            }
        }
        (tried, accepted)
    }
    let (ct, ca) = sweep(rich_coordinators(), drive_coordinator);
    let (tt, ta) = sweep(rich_tasks(), drive_task);
    // Not vacuous: many damages are accepted (a changed timestamp or id
    // that is still consistent) and driven, many are refused.
    for (kind, tried, accepted) in [("coordinator", ct, ca), ("task", tt, ta)] {
        assert!(tried > 300, "{kind}: {tried} damages tried");
        assert!(
            accepted > 20 && accepted < tried,
            "{kind}: {accepted} of {tried} accepted"
        );
        eprintln!("{kind}: {accepted} of {tried} single damages accepted and driven soundly");
    }
}

/// Replacement values for one scalar of a snapshot.
const VALUES: [fn() -> Value; 9] = [
    || Value::from(0),
    || Value::from(1),
    || Value::from(2),
    || Value::from(3),
    || Value::from(17),
    || Value::from(u64::MAX),
    || Value::Bool(true),
    || Value::Bool(false),
    || Value::Null,
];

/// Replaces the `which`-th scalar (modulo their number) with `VALUES[value]`;
/// false when there is no scalar.
fn damage(v: &mut Value, which: usize, value: usize) -> bool {
    // Count the scalars in a fixed walk order, then replace the chosen one
    // in a second walk.
    fn count(v: &Value) -> usize {
        match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 1,
        }
    }
    fn replace(v: &mut Value, k: &mut usize, with: &Value) -> bool {
        match v {
            Value::Array(a) => a.iter_mut().any(|x| replace(x, k, with)),
            Value::Object(o) => o.values_mut().any(|x| replace(x, k, with)),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
                if *k == 0 {
                    *v = with.clone();
                    true
                } else {
                    *k -= 1;
                    false
                }
            }
        }
    }
    let n = count(v);
    if n == 0 {
        return false;
    }
    let Some(make) = VALUES.get(value) else {
        return false;
    };
    let mut k = which % n;
    replace(v, &mut k, &make())
}

/// Feeds an accepted coordinator every event it could plausibly get next,
/// checking every single-state invariant after each (a debug build also
/// panics on a branch the reducer's structure rules out).
fn drive_coordinator(mut s: CoordinatorState) -> Result<(), String> {
    invariants::coordinator::check_state(&s).map_err(|v| format!("accepted: {v}"))?;
    let cfg = s.config().clone();
    let job = cfg.job();
    let mut events: Vec<CoordinatorEvent> = Vec::new();
    for (timer, _) in s.timers() {
        events.push(CoordinatorEvent::TimerFired { timer: *timer });
    }
    if let Some(r) = s.in_flight() {
        let next = s
            .last_id()
            .map_or(Some(CheckpointId(1)), CheckpointId::next);
        if let Some(id) = next {
            events.push(CoordinatorEvent::CheckpointIdAllocated {
                request: r.id(),
                result: Ok(id),
            });
        }
    }
    for p in s.pending() {
        events.push(CoordinatorEvent::MasterHooksDone {
            checkpoint: p.id(),
            result: Ok(()),
        });
        for (slot, attempt) in p.attempts().enumerate() {
            if let Some(task) = cfg.tasks_to_wait().get(slot) {
                events.push(CoordinatorEvent::Acknowledge {
                    job,
                    task: *task,
                    attempt,
                    checkpoint: p.id(),
                    state: Some(StateHandle(9_000 + slot as u64)),
                });
            }
        }
        events.push(CoordinatorEvent::FinalizeDone {
            checkpoint: p.id(),
            result: Ok(()),
        });
        events.push(CoordinatorEvent::StoreDone {
            checkpoint: p.id(),
            result: Ok(()),
        });
    }
    for t in cfg.tasks_to_wait() {
        if let Some(st) = s.task_status(*t) {
            events.push(CoordinatorEvent::TaskFailed {
                task: *t,
                attempt: st.attempt,
            });
            events.push(CoordinatorEvent::TaskRunning {
                task: *t,
                attempt: AttemptNo(st.attempt.0.saturating_add(1)),
            });
        }
    }
    events.extend([
        CoordinatorEvent::StartScheduler,
        CoordinatorEvent::Trigger {
            kind: TriggerKind::Checkpoint { forced: true },
        },
        CoordinatorEvent::TimerFired {
            timer: Timer::Periodic,
        },
        CoordinatorEvent::Restore {
            source: coordinator::RestoreSource::Latest {
                error_if_none: false,
            },
        },
        CoordinatorEvent::StopScheduler,
        CoordinatorEvent::Shutdown {
            status: coordinator::JobStatus::Suspended,
        },
    ]);
    let mut now = s.now();
    for e in events {
        now = now.saturating_add(1);
        let before = s.clone();
        let step = s.apply(now, e.clone());
        invariants::coordinator::check_state(&s).map_err(|v| format!("after {e:?}: {v}"))?;
        invariants::coordinator::check_step(&before, &e, &step, &s)
            .map_err(|v| format!("step {e:?}: {v}"))?;
    }
    Ok(())
}

/// The task counterpart of [`drive_coordinator`].
fn drive_task(mut s: TaskState) -> Result<(), String> {
    invariants::task::check_state(&s).map_err(|v| format!("accepted: {v}"))?;
    let mut ids: Vec<CheckpointId> = s.write_results().iter().map(|(id, _)| *id).collect();
    ids.extend(s.pending_mails());
    ids.extend(s.async_parts());
    ids.extend(s.aborted_ids());
    ids.extend(s.last_started());
    ids.extend(s.last_started().and_then(CheckpointId::next));
    ids.sort_unstable();
    ids.dedup();
    let mut events = Vec::new();
    for id in ids {
        events.extend([
            TaskEvent::BarrierReceived {
                checkpoint: id,
                via: Thread::Netty,
            },
            TaskEvent::WriterCompleted { checkpoint: id },
            TaskEvent::NotifyAborted { checkpoint: id },
            TaskEvent::CheckpointMail { checkpoint: id },
            TaskEvent::AsyncPartCompleted {
                checkpoint: id,
                handle: StateHandle(id.0),
            },
            TaskEvent::CancelMarker { checkpoint: id },
            TaskEvent::NotifyComplete { checkpoint: id },
        ]);
    }
    events.extend([TaskEvent::OperatorFailed, TaskEvent::Close]);
    for e in events {
        let step = s.apply(Millis(0), e.clone());
        invariants::task::check_state(&s).map_err(|v| format!("after {e:?}: {v}"))?;
        invariants::task::check_effects(&step.effects).map_err(|v| format!("{e:?}: {v}"))?;
    }
    Ok(())
}

/// Worlds reachable in a small model with savepoints, task failover and a
/// coordinator failover (depth first, so completions, storage and the
/// checkpoint in doubt at shutdown are reached; at most `limit`).
fn model_worlds(cfg: ModelConfig, limit: usize) -> Vec<World> {
    let sim = Sim::new(cfg);
    let mut seen: HashSet<World> = HashSet::new();
    let mut stack = vec![sim.init()];
    let mut out = Vec::new();
    let mut actions = Vec::new();
    while let Some(w) = stack.pop() {
        if out.len() >= limit {
            break;
        }
        if !seen.insert(w.clone()) {
            continue;
        }
        actions.clear();
        sim.enabled(&w, &mut actions);
        for a in &actions {
            if let Some(n) = sim.step(&w, *a, None) {
                stack.push(n);
            }
        }
        out.push(w);
    }
    out
}

fn small_world() -> ModelConfig {
    ModelConfig {
        tasks: 2,
        checkpoints: 2,
        savepoints: 1,
        task_failures: 1,
        coordinator_failovers: 1,
        ..ModelConfig::default()
    }
}

/// Coordinators with something in every part: pending checkpoints in every
/// phase, retained ones, a request in flight, the one in doubt.
fn rich_coordinators() -> Vec<CoordinatorState> {
    thread_local! {
        static RICH: Vec<CoordinatorState> = {
            let worlds = model_worlds(small_world(), 40_000);
            let mut picks: Vec<CoordinatorState> = Vec::new();
            let wanted: [fn(&CoordinatorState) -> bool; 4] = [
                |c| c.pending().any(|p| p.phase() == PendingPhase::Storing) && c.completed().count() > 0,
                |c| c.pending().any(|p| p.acks().any(|a| a != coordinator::AckSlot::Waiting) && p.remaining() > 0),
                |c| c.in_flight().is_some() && c.completed().count() > 0,
                |c| c.in_doubt().is_some(),
            ];
            for want in wanted {
                if let Some(w) = worlds.iter().find(|w| want(&w.coord)) {
                    picks.push((*w.coord).clone());
                }
            }
            picks
        };
    }
    RICH.with(Clone::clone)
}

fn rich_tasks() -> Vec<TaskState> {
    thread_local! {
        static RICH: Vec<TaskState> = {
            let worlds = model_worlds(small_world(), 40_000);
            let wanted: [fn(&TaskState) -> bool; 4] = [
                |t| !t.write_results().is_empty() && !t.pending_mails().is_empty(),
                |t| !t.async_parts().is_empty(),
                |t| !t.aborted_ids().is_empty(),
                |t| t.last_completed().is_some() && t.last_executed().is_some(),
            ];
            wanted
                .iter()
                .filter_map(|want| {
                    worlds.iter().flat_map(|w| w.tasks.iter()).find(|t| want(&t.st)).map(|t| t.st.clone())
                })
                .collect()
        };
    }
    RICH.with(Clone::clone)
}

#[test]
fn every_state_of_a_small_world_round_trips() {
    let worlds = model_worlds(small_world(), 40_000);
    assert!(worlds.len() > 10_000, "{} worlds", worlds.len());
    let mut coords: HashSet<&CoordinatorState> = HashSet::new();
    let mut tasks: HashSet<&TaskState> = HashSet::new();
    for w in &worlds {
        coords.insert(&w.coord);
        for t in &w.tasks {
            tasks.insert(&t.st);
        }
    }
    for c in &coords {
        if let Err(e) = coordinator_round_trip(c) {
            panic!("{e}");
        }
    }
    for t in &tasks {
        if let Err(e) = task_round_trip(t) {
            panic!("{e}");
        }
    }
    // The sample is rich: every part of the state occurs somewhere.
    assert!(coords.iter().any(|c| c.in_doubt().is_some()));
    assert!(coords.iter().any(|c| c.is_shutdown()));
    assert!(coords
        .iter()
        .any(|c| c.pending().any(|p| p.phase() == PendingPhase::Finalizing)));
    assert!(tasks.iter().any(|t| !t.aborted_ids().is_empty()));
    assert!(tasks.iter().any(|t| !t.async_parts().is_empty()));
    assert_eq!(rich_coordinators().len(), 4, "a rich state is missing");
    assert_eq!(rich_tasks().len(), 4, "a rich task state is missing");
}

fn rich() -> CoordinatorSnapshot {
    rich_coordinators()
        .first()
        .map(CoordinatorState::snapshot)
        .unwrap_or_else(|| panic!("no rich coordinator"))
}

fn refused(snap: CoordinatorSnapshot) -> SnapshotError {
    // The typed path and the serde path agree.
    let json = serde_json::to_string(&snap).unwrap_or_default();
    assert!(serde_json::from_str::<CoordinatorState>(&json).is_err());
    match CoordinatorState::from_snapshot(snap) {
        Ok(s) => panic!("accepted a damaged snapshot: {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn damaged_coordinator_snapshots_are_typed_errors() {
    let good = rich();
    assert!(CoordinatorState::from_snapshot(good.clone()).is_ok());

    let mut s = good.clone();
    s.version = SNAPSHOT_VERSION + 1;
    assert_eq!(
        refused(s),
        SnapshotError::Version {
            found: SNAPSHOT_VERSION + 1,
            supported: SNAPSHOT_VERSION
        }
    );

    let mut s = good.clone();
    s.settings.interval_ms = 0;
    assert!(matches!(refused(s), SnapshotError::Config(_)));

    let mut s = good.clone();
    s.tasks.pop();
    assert!(matches!(
        refused(s),
        SnapshotError::Corrupt(Corruption::TaskCount { .. })
    ));

    let mut s = good.clone();
    let p = s
        .pending
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("pending"));
    s.pending.push(p);
    assert_eq!(
        refused(s),
        SnapshotError::Corrupt(Corruption::Unordered("pending"))
    );

    let mut s = good.clone();
    if let Some(p) = s.pending.first_mut() {
        p.acks.pop();
    }
    assert!(matches!(
        refused(s),
        SnapshotError::Corrupt(Corruption::AckSlots { .. })
    ));

    let mut s = good.clone();
    if let Some(p) = s.pending.first_mut() {
        p.request = coordinator::RequestId(s.next_request);
    }
    assert!(matches!(
        refused(s),
        SnapshotError::Corrupt(Corruption::RequestNotIssued { .. })
    ));

    let mut s = good.clone();
    s.last_id = Some(CheckpointId(0));
    assert!(matches!(
        refused(s),
        SnapshotError::Corrupt(Corruption::IdAboveLast { .. })
    ));

    let mut s = good.clone();
    s.timers.reverse();
    s.timers.push((Timer::Periodic, Millis(1)));
    assert_eq!(
        refused(s),
        SnapshotError::Corrupt(Corruption::Unordered("timers"))
    );

    // Structure intact, an invariant broken: the checkpoint in storage
    // loses its completing marker.
    let mut s = good.clone();
    s.completing = None;
    assert!(matches!(refused(s), SnapshotError::Invariant(_)));

    // The marker moved to a checkpoint that still waits for acks: the
    // invariants allow it (it names a pending checkpoint), the structure
    // check does not (a timeout would discard state being stored).
    let mut s = good.clone();
    let storing = s
        .pending
        .iter_mut()
        .find(|p| p.phase == PendingPhase::Storing)
        .unwrap_or_else(|| panic!("the rich snapshot stores a checkpoint"));
    storing.phase = PendingPhase::AwaitingAcks;
    let id = storing.id;
    assert_eq!(
        refused(s),
        SnapshotError::Corrupt(Corruption::Completing(id))
    );

    // Regression (CI, a random proptest seed): the retained checkpoint
    // renamed to the id of the one still being stored. Every structural
    // check passed, and storing it later completed the same id twice.
    let mut s = good.clone();
    let storing = s
        .pending
        .iter()
        .find(|p| p.phase == PendingPhase::Storing)
        .map(|p| p.id)
        .unwrap_or_else(|| panic!("the rich snapshot stores a checkpoint"));
    let Some(c) = s.completed.first_mut() else {
        panic!("the rich snapshot retains a checkpoint")
    };
    c.id = storing;
    let SnapshotError::Invariant(v) = refused(s) else {
        panic!("not refused by an invariant")
    };
    assert_eq!(v.invariant, invariants::coordinator::names::COMPLETED);

    // Shut down with a checkpoint still being stored, every timer, request
    // and other checkpoint gone: only `shutdown-quiet` can object (a
    // survivor of mutation shard 1/30 weakened it to "or no timer").
    let mut s = good.clone();
    s.shutdown = true;
    s.timers.clear();
    s.in_flight = None;
    s.queue.clear();
    s.pending.retain(|p| p.phase == PendingPhase::Storing);
    let SnapshotError::Invariant(v) = refused(s) else {
        panic!("not refused by an invariant")
    };
    assert_eq!(v.invariant, invariants::coordinator::names::SHUTDOWN_QUIET);

    // The latest completed id above the id counter, or below a retained id.
    let mut s = good.clone();
    s.latest_completed = s.last_id.and_then(CheckpointId::next);
    assert!(matches!(refused(s), SnapshotError::Invariant(_)));
    let mut s = good.clone();
    s.latest_completed = Some(CheckpointId(0));
    assert!(matches!(refused(s), SnapshotError::Invariant(_)));

    // An unknown field is a decode error.
    let mut v = serde_json::to_value(&good).unwrap_or_default();
    if let Value::Object(o) = &mut v {
        o.insert("surprise".into(), Value::Bool(true));
    }
    assert!(serde_json::from_value::<CoordinatorState>(v).is_err());
}

#[test]
fn damaged_task_snapshots_are_typed_errors() {
    let good: TaskSnapshot = rich_tasks()
        .first()
        .map(TaskState::snapshot)
        .unwrap_or_else(|| panic!("no rich task"));
    assert!(TaskState::from_snapshot(good.clone()).is_ok());
    let refused = |snap: TaskSnapshot| {
        let json = serde_json::to_string(&snap).unwrap_or_default();
        assert!(serde_json::from_str::<TaskState>(&json).is_err());
        TaskState::from_snapshot(snap).err()
    };

    let mut s = good.clone();
    s.config.aborted_ids_max = 0;
    assert!(matches!(refused(s), Some(SnapshotError::TaskConfig(_))));

    let mut s = good.clone();
    s.pending_mails.reverse();
    s.pending_mails.extend(s.pending_mails.clone());
    assert!(matches!(
        refused(s),
        Some(SnapshotError::Corrupt(Corruption::Unordered(
            "pending_mails"
        )))
    ));

    // A write result whose mail is gone would never be removed.
    let mut s = good.clone();
    s.pending_mails.clear();
    assert!(matches!(refused(s), Some(SnapshotError::Invariant(_))));

    let mut s = good;
    s.version = 0;
    assert!(matches!(refused(s), Some(SnapshotError::Version { .. })));
}

/// A coordinator that completed a savepoint (the small world's depth-first
/// sample does not reach one): every I/O answered at once, every task acks.
fn with_a_completed_savepoint() -> CoordinatorState {
    let job = JobId(1);
    let mut s = CoordinatorState::from_settings(CoordinatorSettings::with_tasks(job, 2))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut inbox = vec![CoordinatorEvent::Trigger {
        kind: TriggerKind::Savepoint {
            target: "/sp".into(),
        },
    }];
    let mut next_id = 1;
    while let Some(e) = inbox.pop() {
        let step = s.apply(Millis(1), e);
        for fx in &step.effects {
            match fx {
                CoordinatorEffect::Io { request: req, .. } => {
                    inbox.push(req.answer(IoAnswer::Ok {
                        id: CheckpointId(next_id),
                    }));
                    next_id += 1;
                }
                CoordinatorEffect::Rpc {
                    message: TaskMessage::Trigger { checkpoint, .. },
                    ..
                } => {
                    let checkpoint = *checkpoint;
                    // The source's barrier reaches every task; each acks.
                    for task in s.config().tasks_to_wait().to_vec() {
                        let attempt = s.task_status(task).map(|t| t.attempt).unwrap_or_default();
                        let ack = ToCoordinator::Ack {
                            checkpoint,
                            handle: StateHandle(10 + u64::from(task.0)),
                        };
                        inbox.push(ack.event(job, task, attempt));
                    }
                }
                CoordinatorEffect::Rpc { .. }
                | CoordinatorEffect::Timer { .. }
                | CoordinatorEffect::Discard { .. }
                | CoordinatorEffect::Job(_)
                | CoordinatorEffect::Report(_) => {}
            }
        }
    }
    s
}

#[test]
fn a_completed_savepoint_round_trips() {
    let s = with_a_completed_savepoint();
    assert!(s.completed().any(|c| c.is_savepoint()), "{s:?}");
    if let Err(e) = coordinator_round_trip(&s) {
        panic!("{e}");
    }
    // The savepoint flag is what reads back, not a default.
    let mut snap = s.snapshot();
    for c in &mut snap.completed {
        c.savepoint = false;
    }
    let back = CoordinatorState::from_snapshot(snap).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(back, s);
}

#[test]
fn a_fresh_coordinator_and_task_serialize_to_plain_json() {
    let c = CoordinatorState::from_settings(CoordinatorSettings::with_tasks(JobId(3), 2))
        .unwrap_or_else(|e| panic!("{e}"));
    let v = serde_json::to_value(&c).unwrap_or_default();
    assert_eq!(v["version"], SNAPSHOT_VERSION);
    assert_eq!(v["settings"]["job"], 3);
    assert_eq!(v["tasks"].as_array().map(Vec::len), Some(2));
    let t = TaskState::new(TaskConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let v = serde_json::to_value(&t).unwrap_or_default();
    assert_eq!(v["lifecycle"], "Running");
    assert_eq!(v["results"], Value::Array(Vec::new()));
}
