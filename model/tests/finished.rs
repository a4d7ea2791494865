//! Finished tasks in the world (`--finished-tasks`, FLIP-147): the fixed
//! semantics hold, a finish is reached and the job ends on its final
//! checkpoint, and the state count is pinned and cross-checked by an exact
//! search over the states themselves; FLINK-33186's knob is found in its
//! smallest world and its trace replays to the same invariant in core.

mod common;
use common::*;

use ckpt_core::trace::replay;
use ckpt_core::{LegacyBug, Semantics};
use ckpt_model::render::replay::Replay;
use ckpt_model::search::exact::exact_unique_states;
use ckpt_model::{props, shortest_violation, ModelConfig};

/// One task that may finish, 2 periodic firings (one can come after the
/// finish: the final checkpoint), no faults.
fn one_task_finishes() -> ModelConfig {
    ModelConfig {
        tasks: 1,
        checkpoints: 2,
        faults: 0,
        finished_tasks: 1,
        ..ModelConfig::default()
    }
}

#[test]
fn a_finished_task_leaves_the_plan_and_the_job_ends_on_its_final_checkpoint() {
    let cfg = one_task_finishes();
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(witnessed(&r, props::S_FINISHED), "{:?}", r.properties);
    assert!(covered(
        &r,
        "coordinator",
        "TaskFinished",
        "Applied::TaskUpdated"
    ));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, PINNED_ONE_TASK);
}

#[test]
fn a_finished_source_leaves_the_task_reading_from_it_triggered_itself() {
    // Two tasks, one of which may finish (the source: the downstream
    // task's input has not ended before), one periodic firing: when the
    // source finished first, the coordinator triggers the downstream task
    // itself.
    let cfg = ModelConfig {
        tasks: 2,
        checkpoints: 1,
        ..one_task_finishes()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(covered(
        &r,
        "coordinator",
        "TaskFinished",
        "Applied::TaskUpdated"
    ));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, PINNED_SOURCE);
}

const PINNED_ONE_TASK: usize = 3_076;
const PINNED_SOURCE: usize = 1_228;

#[test]
fn flink_33186_is_found_and_its_trace_replays_in_core() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::FinishFailsCheckpoint),
        checkpoints: 1,
        ..one_task_finishes()
    };
    let cx = shortest_violation(&cfg, 1).unwrap_or_else(|| panic!("FLINK-33186 not found"));
    assert_eq!(cx.property, props::FINISH);
    // The periodic trigger, its id, then the task finishes before the
    // trigger reaches it.
    assert_eq!(cx.actions.len(), 3, "{:?}", cx.actions);
    let report = replay(&Replay::new(&cfg, &cx.actions).trace()).unwrap_or_else(|e| panic!("{e}"));
    let (_, v) = report
        .violation
        .unwrap_or_else(|| panic!("replay is clean"));
    assert_eq!(v.invariant, "a-finish-is-not-a-failure", "{v}");
    let fixed = ModelConfig {
        semantics: Semantics::Fixed,
        ..cfg
    };
    let report =
        replay(&Replay::new(&fixed, &cx.actions).trace()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.violation, None);
}

/// Checkpoints after finished tasks off (Flink before 1.14): once the
/// task finished no checkpoint is triggered, and the job ends with its
/// last task, with no final checkpoint; the same invariants hold
/// (`job-finishes-on-its-final-checkpoint` says "with no final checkpoint"
/// in this mode).
fn checkpoints_after_finish_off() -> ModelConfig {
    ModelConfig {
        checkpoints_after_finish: false,
        ..one_task_finishes()
    }
}

#[test]
fn without_checkpoints_after_finish_the_job_ends_with_its_last_task() {
    let cfg = checkpoints_after_finish_off();
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(witnessed(&r, props::S_FINISHED), "{:?}", r.properties);
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, PINNED_OFF);
    // Fewer states than with the setting on: no final checkpoint, and no
    // trigger once the task finished.
    assert!(n < PINNED_ONE_TASK);
    // Two tasks, the source may finish: with the setting off its finish
    // blocks the downstream task's checkpoints too.
    let two = ModelConfig {
        tasks: 2,
        checkpoints: 1,
        ..checkpoints_after_finish_off()
    };
    let r = check(&two);
    assert!(r.holds(), "{:?}", r.properties);
    assert_eq!(unique(&two), PINNED_OFF_SOURCE);
}

#[test]
fn flink_33186_is_found_with_checkpoints_after_finish_off_too() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::FinishFailsCheckpoint),
        checkpoints: 1,
        ..checkpoints_after_finish_off()
    };
    let cx = shortest_violation(&cfg, 1).unwrap_or_else(|| panic!("FLINK-33186 not found"));
    assert_eq!(cx.property, props::FINISH);
    assert_eq!(cx.actions.len(), 3, "{:?}", cx.actions);
}

const PINNED_OFF: usize = 2_472;
const PINNED_OFF_SOURCE: usize = 1_173;
