//! Checkpointing during recovery (`--recovering-tasks`, FLINK-38544): a
//! task restarted with in-flight channel state to replay declines
//! checkpoints until that state is fetched, then takes them with the
//! recovered input its channels have not consumed, then recovers. The
//! smallest world that reaches it holds, witnesses a checkpoint taken
//! during recovery, covers every phase of the recovery trigger, and has a
//! pinned, exactly cross-checked state count.

mod common;
use common::*;

use ckpt_model::search::exact::exact_unique_states;
use ckpt_model::{props, ModelConfig, Status, SysModel};
use stateright::{Checker, Model};

/// 2 tasks (task 1 has one input channel), 1 checkpoint, no faults, one
/// task failure whose restart replays channel state, no shutdown.
fn recovering() -> ModelConfig {
    ModelConfig {
        checkpoints: 1,
        faults: 0,
        shutdown: false,
        task_failures: 1,
        recovering_tasks: 1,
        ..ModelConfig::default()
    }
}

#[test]
fn a_recovering_task_takes_checkpoints_with_its_recovered_input() {
    let cfg = recovering();
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    for name in [props::S_DURING_RECOVERY, props::S_FAILOVER] {
        assert!(
            r.properties
                .iter()
                .any(|p| p.name == name && p.status == Status::Witnessed),
            "{name} not witnessed"
        );
    }
    // NOT_READY, barrier-inserting and every recovery event, each reached.
    assert!(covered_in(
        &r,
        "task",
        "recovering",
        "BarrierReceived",
        "Skipped(Declined(TaskNotReady))"
    ));
    assert!(covered_in(
        &r,
        "task",
        "recovering",
        "BarrierReceived",
        "Applied"
    ));
    for event in ["RecoveryStarted", "ChannelRecovered", "RecoveryFinished"] {
        assert!(
            covered_in(&r, "task", "recovering", event, "Applied"),
            "{event}"
        );
    }
    let n = SysModel::new(cfg.clone())
        .checker()
        .threads(1)
        .symmetry()
        .spawn_dfs()
        .join()
        .unique_state_count();
    assert_eq!(n, exact_unique_states(&cfg, true, 2_000_000));
    assert_eq!(n, 6_267);
}

#[test]
fn without_recovering_tasks_the_same_world_never_recovers() {
    let cfg = ModelConfig {
        recovering_tasks: 0,
        ..recovering()
    };
    let r = check(&cfg);
    assert!(r.holds(), "{:?}", r.properties);
    assert!(!r
        .properties
        .iter()
        .any(|p| p.name == props::S_DURING_RECOVERY));
    assert!(!covered_in(
        &r,
        "task",
        "recovering",
        "RecoveryStarted",
        "Applied"
    ));
}
