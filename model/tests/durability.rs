//! The durability promise over the world's store: the legacy discard-while-
//! storing knob is found (shortest counterexample, replayed in core), and
//! the opt-in bounds that exercise the store (coordinator failover, job
//! failover, a savepoint start, master hooks, user checkpoints; shared
//! state, savepoints under retention and their disposal, a job failover
//! while a checkpoint stores, a deposed coordinator that keeps writing)
//! hold, reach what they are for, and have pinned, exactly cross-checked
//! state counts.

mod common;
use common::*;

use ckpt_core::trace::replay;
use ckpt_core::{LegacyBug, Semantics};
use ckpt_model::render::replay::Replay;
use ckpt_model::search::exact::exact_unique_states;
use ckpt_model::{props, shortest_violation, ModelConfig};

/// 2 tasks, 1 checkpoint, no faults (reorder network, shutdown on).
fn small() -> ModelConfig {
    ModelConfig {
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    }
}

#[test]
fn legacy_discard_while_storing_is_found_in_the_default_configuration() {
    let legacy = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::DiscardWhileStoring),
        ..ModelConfig::default()
    };
    let cx = shortest_violation(&legacy, 2).unwrap_or_else(|| panic!("not found"));
    assert_eq!(cx.property, props::DURABLE);
    // Trigger, allocate, deliver, run the trigger, both tasks write and ack
    // (barrier, mail, async parts), finalize, shut down while storing.
    assert!(cx.actions.len() <= 16, "{} steps", cx.actions.len());
    let replayed = Replay::new(&legacy, &cx.actions);
    let trace = replayed.trace();
    // What `--trace-out` writes: the end line records the core's verdict.
    let buf = replayed.trace_bytes();
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/traces/durability_discard_while_storing_legacy.jsonl");
    if std::env::var_os("CKPT_BLESS").is_some() {
        std::fs::write(&committed, &buf).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        std::fs::read(&committed).unwrap_or_default(),
        buf,
        "the committed regression trace is this counterexample (CKPT_BLESS=1 rewrites it)"
    );
    // In core alone the step invariant catches the discard.
    let report = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    let (_, v) = report
        .violation
        .unwrap_or_else(|| panic!("replay is clean"));
    assert_eq!(v.invariant, "no-discard-while-storing");
    // The fixed reducer, fed the same story, keeps the state in doubt.
    let fixed = replay(&Replay::new(&ModelConfig::default(), &cx.actions).trace())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fixed.violation, None);
}

#[test]
fn the_fixed_default_keeps_state_in_doubt_and_the_store_keeps_it() {
    let r = check(&small());
    assert!(r.holds(), "{:?}", r.properties);
    assert!(witnessed(&r, props::S_IN_DOUBT_KEPT));
}

#[test]
fn coordinator_failover_recovers_from_the_store() {
    let cfg = ModelConfig {
        coordinator_failovers: 1,
        ..small()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(witnessed(&r, props::S_RESTORED));
    assert!(covered(&r, "coordinator", "Recover", "Applied::Recovered"));
    assert!(covered(&r, "task", "Close", "Applied"));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, 1_428);
}

#[test]
fn job_failover_after_fail_job_restores_the_latest() {
    let cfg = ModelConfig {
        job_failovers: 1,
        ..small()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(covered(
        &r,
        "coordinator",
        "TaskFailed",
        "Applied::TaskUpdated"
    ));
    assert!(covered(&r, "coordinator", "Restore", "Applied::Restored"));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, 748);
}

#[test]
fn a_savepoint_start_restores_it_and_continues_its_ids() {
    let cfg = ModelConfig {
        savepoint_restore: true,
        ..small()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(witnessed(&r, props::S_RESTORED));
    assert!(witnessed(&r, props::S_COMPLETES));
    let (_, log) = ckpt_model::world::Sim::new(cfg.clone()).init_with_log();
    assert!(log
        .first()
        .is_some_and(|d| d.outcome.starts_with("Applied(Restored")));
    assert!(log.first().is_some_and(|d| d
        .effects
        .iter()
        .any(|e| e.starts_with("Job(ResetIdCounter"))));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(
        n, 652,
        "the same space as `small()`, shifted above the savepoint's id"
    );
}

#[test]
fn master_hooks_and_user_checkpoints_are_modelled() {
    let cfg = ModelConfig {
        tasks: 1,
        master_hooks: 1,
        user_checkpoints: 1,
        ..small()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(covered(
        &r,
        "coordinator",
        "MasterHooksDone",
        "Applied::HooksDone"
    ));
    assert!(covered(
        &r,
        "coordinator",
        "Trigger",
        "Applied::AllocatingId"
    ));
    let n = unique(&cfg);
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, 9_749);
}

/// The opt-in bounds of the second durability round: each holds in the
/// fixed semantics, reaches the situation it is for (its witness), and has
/// a pinned state count cross-checked by an exact search over the states
/// themselves.
fn holds_and_reaches(cfg: &ModelConfig, witnesses: &[&str]) -> usize {
    let r = check(cfg);
    assert!(r.holds(), "{:?}", r.properties);
    for w in witnesses {
        assert!(witnessed(&r, w), "{w} not witnessed");
    }
    let n = unique(cfg);
    assert_eq!(n, exact_unique_states(cfg, true, 2_000_000));
    n
}

#[test]
fn shared_state_between_checkpoints_is_never_lost() {
    // One task that may acknowledge its last completed checkpoint's file
    // again; two retained, so the store holds both holders of a file.
    let cfg = ModelConfig {
        tasks: 1,
        checkpoints: 2,
        retained: 2,
        shared_state: true,
        ..small()
    };
    let n = holds_and_reaches(&cfg, &[props::S_SHARED, props::S_IN_DOUBT_KEPT]);
    assert_eq!(n, 2_306);
}

#[test]
fn savepoints_outlive_retention_until_disposed_of() {
    let cfg = ModelConfig {
        tasks: 1,
        checkpoints: 2,
        max_concurrent: 2,
        savepoints: 1,
        dispose_savepoints: true,
        shutdown: false,
        ..small()
    };
    let n = holds_and_reaches(
        &cfg,
        &[
            props::S_SAVEPOINT,
            props::S_SAVEPOINT_OUTLIVED,
            props::S_SAVEPOINT_AFTER_NEWER,
            props::S_DISPOSED,
        ],
    );
    // 532,537 until the world's store refused to dispose of its latest
    // checkpoint (the restore point), as the file store does.
    assert_eq!(n, 488_677);
}

#[test]
fn a_job_failover_while_a_checkpoint_stores_restores_what_committed() {
    let cfg = ModelConfig {
        tasks: 1,
        checkpoints: 2,
        max_concurrent: 2,
        job_failovers: 1,
        ..small()
    };
    let n = holds_and_reaches(&cfg, &[props::S_RESTORE_WAITED, props::S_RESTORED]);
    assert_eq!(n, 5_016);
}

#[test]
fn a_deposed_coordinator_that_keeps_writing_is_refused() {
    let cfg = ModelConfig {
        tasks: 1,
        coordinator_failovers: 1,
        zombie_coordinators: 1,
        ..small()
    };
    let n = holds_and_reaches(&cfg, &[props::S_FENCED, props::S_RESTORED]);
    assert_eq!(n, 170);
}

#[test]
fn a_job_stopped_with_a_savepoint_ends_on_it_and_resumes_from_it() {
    // One task, periodic checkpoints and two concurrent, so that a
    // checkpoint can be pending or due when the stop is asked for; the
    // stop's savepoint must be the job's last checkpoint, complete only
    // once stored, and a later start must restore it.
    let cfg = ModelConfig {
        tasks: 1,
        checkpoints: 1,
        max_concurrent: 2,
        stop_with_savepoint: true,
        shutdown: false,
        ..small()
    };
    let n = holds_and_reaches(&cfg, &[props::S_STOP_RESUMED, props::S_RESTORED]);
    assert_eq!(n, 2_309);
}

#[test]
fn shared_files_are_deleted_once_after_their_last_reference() {
    // File merging: each new handle is a segment of a physical file shared
    // with the next one written. One task over two checkpoints (a file
    // across checkpoints), and three tasks over one (a file across tasks,
    // with the two downstream tasks reduced by symmetry: the manager and
    // the file ledger are renamed with them).
    let across_checkpoints = ModelConfig {
        tasks: 1,
        checkpoints: 2,
        shared_files: true,
        ..small()
    };
    let n = holds_and_reaches(
        &across_checkpoints,
        &[props::S_SHARED_FILE_DELETED, props::S_TWO_COMPLETE],
    );
    assert_eq!(n, 2_267);
    let across_tasks = ModelConfig {
        tasks: 3,
        shared_files: true,
        ..small()
    };
    let n = holds_and_reaches(&across_tasks, &[props::S_SHARED_FILE_DELETED]);
    assert_eq!(n, 10_631);
}
