//! Unit tests of checkpointing during recovery (FLINK-38544): the recovery
//! trigger's phases, their events' ignored answers, and the FLINK-40518
//! legacy knob.

use super::*;
use crate::invariants::checked::{self, Rigor};
use crate::invariants::task::{check_recovery_capture, names, TaskMonitor};
use crate::types::{CheckpointId, Millis, StateHandle, Thread};

use TaskEffect as E;

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn barrier(n: u64) -> TaskEvent {
    TaskEvent::BarrierReceived {
        checkpoint: cp(n),
        via: Thread::Netty,
    }
}

/// A recovering task and its monitor; every step goes through the checked
/// step and must hold.
struct Recovering {
    s: TaskState,
    m: TaskMonitor,
}

impl Recovering {
    fn new(semantics: Semantics, during_recovery: bool) -> Recovering {
        let config = TaskConfig {
            semantics,
            checkpoint_during_recovery: during_recovery,
            replays_channel_state: true,
            ..TaskConfig::default()
        };
        Recovering {
            s: TaskState::new(config).unwrap_or_else(|e| panic!("{e}")),
            m: TaskMonitor::new(),
        }
    }

    fn step(&mut self, ev: TaskEvent) -> (Vec<TaskEffect>, Outcome) {
        let (t, verdict) = checked::task_step(&mut self.m, &self.s, Millis(0), &ev, Rigor::Full);
        if let Err(v) = verdict {
            panic!("{v}");
        }
        self.s = t.state;
        (t.step.effects, t.step.outcome)
    }
}

fn declined_not_ready(n: u64) -> (Vec<TaskEffect>, Outcome) {
    (
        vec![
            E::Downstream(ChannelItem::CancelMarker(cp(n))),
            E::Coordinator(ToCoordinator::Decline {
                checkpoint: cp(n),
                reason: DeclineReason::TaskNotReady,
            }),
        ],
        Outcome::Skipped(SkipReason::Declined(DeclineReason::TaskNotReady)),
    )
}

#[test]
fn a_checkpoint_before_the_channel_state_is_fetched_is_declined_as_not_ready() {
    let mut h = Recovering::new(Semantics::Fixed, true);
    assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::NotReady);
    assert_eq!(h.step(barrier(1)), declined_not_ready(1));
    assert!(h.m.unanswered().is_empty());
}

#[test]
fn a_checkpoint_while_channels_replay_captures_their_recovered_input() {
    let mut h = Recovering::new(Semantics::Fixed, true);
    let (fx, out) = h.step(TaskEvent::RecoveryStarted { channels: 2 });
    assert_eq!((fx, out), (vec![], Outcome::Applied));
    assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::InsertBarriers);
    let (fx, _) = h.step(TaskEvent::ChannelRecovered);
    assert!(fx.is_empty());
    assert_eq!(h.s.recovering_channels(), 1);
    let (fx, out) = h.step(barrier(1));
    assert_eq!(out, Outcome::Applied);
    assert_eq!(
        fx,
        vec![
            E::Writer(WriterCommand::Start(cp(1))),
            E::Writer(WriterCommand::CaptureRecovered {
                checkpoint: cp(1),
                channels: 1,
            }),
            E::Mail(cp(1)),
        ]
    );
    assert_eq!(h.m.unanswered(), &[cp(1)]);
    h.step(TaskEvent::CheckpointMail { checkpoint: cp(1) });
    let (fx, _) = h.step(TaskEvent::AsyncPartCompleted {
        checkpoint: cp(1),
        handle: StateHandle(7),
    });
    assert_eq!(
        fx,
        vec![E::Coordinator(ToCoordinator::Ack {
            checkpoint: cp(1),
            handle: StateHandle(7),
        })]
    );
    assert!(h.m.unanswered().is_empty());
}

#[test]
fn the_task_recovered_only_once_drained_and_every_channel_consumed_in_either_order() {
    for drain_first in [true, false] {
        let mut h = Recovering::new(Semantics::Fixed, true);
        h.step(TaskEvent::RecoveryStarted { channels: 1 });
        let order = if drain_first {
            [TaskEvent::RecoveryFinished, TaskEvent::ChannelRecovered]
        } else {
            [TaskEvent::ChannelRecovered, TaskEvent::RecoveryFinished]
        };
        let [first, second] = order;
        assert_eq!(h.step(first).1, Outcome::Applied);
        assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::InsertBarriers);
        assert_eq!(h.step(second).1, Outcome::Applied);
        assert_eq!(h.s.recovery(), None);
        assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::NoOp);
        // Recovered: a checkpoint is a plain one.
        let (fx, _) = h.step(barrier(1));
        assert_eq!(
            fx,
            vec![E::Writer(WriterCommand::Start(cp(1))), E::Mail(cp(1))]
        );
    }
}

#[test]
fn a_source_recovers_as_soon_as_its_state_is_fetched() {
    let mut h = Recovering::new(Semantics::Fixed, true);
    h.step(TaskEvent::RecoveryStarted { channels: 0 });
    assert_eq!(h.s.recovery(), None);
}

#[test]
fn without_checkpointing_during_recovery_every_checkpoint_is_declined_until_recovered() {
    let mut h = Recovering::new(Semantics::Fixed, false);
    h.step(TaskEvent::RecoveryStarted { channels: 1 });
    assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::NotReady);
    assert_eq!(h.step(barrier(1)), declined_not_ready(1));
    h.step(TaskEvent::RecoveryFinished);
    h.step(TaskEvent::ChannelRecovered);
    let (fx, _) = h.step(barrier(2));
    assert_eq!(
        fx,
        vec![E::Writer(WriterCommand::Start(cp(2))), E::Mail(cp(2))]
    );
}

#[test]
fn recovery_events_out_of_place_are_ignored() {
    use IgnoreReason as I;
    let mut h = Recovering::new(Semantics::Fixed, true);
    for (ev, why) in [
        (TaskEvent::ChannelRecovered, I::RecoveryNotStarted),
        (TaskEvent::RecoveryFinished, I::RecoveryNotStarted),
    ] {
        assert_eq!(h.step(ev), (vec![], Outcome::Ignored(why)));
    }
    h.step(TaskEvent::RecoveryStarted { channels: 1 });
    assert_eq!(
        h.step(TaskEvent::RecoveryStarted { channels: 1 }).1,
        Outcome::Ignored(I::RecoveryAlreadyStarted)
    );
    h.step(TaskEvent::ChannelRecovered);
    assert_eq!(
        h.step(TaskEvent::ChannelRecovered).1,
        Outcome::Ignored(I::NoChannelRecovering)
    );
    h.step(TaskEvent::RecoveryFinished);
    for ev in [
        TaskEvent::RecoveryStarted { channels: 1 },
        TaskEvent::ChannelRecovered,
        TaskEvent::RecoveryFinished,
    ] {
        assert_eq!(h.step(ev).1, Outcome::Ignored(I::NotRecovering));
    }
    // A task that never recovered ignores them too, and a failed one.
    let mut fresh = TaskState::new(TaskConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fresh.apply(Millis(0), TaskEvent::RecoveryFinished).outcome,
        Outcome::Ignored(I::NotRecovering)
    );
    let mut failed = Recovering::new(Semantics::Fixed, true);
    failed.step(TaskEvent::OperatorFailed);
    assert_eq!(
        failed.step(TaskEvent::RecoveryStarted { channels: 1 }).1,
        Outcome::Ignored(I::TaskFailed)
    );
    let mut drained = Recovering::new(Semantics::Fixed, true);
    drained.step(TaskEvent::RecoveryStarted { channels: 1 });
    drained.step(TaskEvent::RecoveryFinished);
    assert_eq!(
        drained.step(TaskEvent::RecoveryFinished).1,
        Outcome::Ignored(I::AlreadyDrained)
    );
}

#[test]
fn legacy_no_op_while_channels_recover_leaves_the_checkpoint_unanswered() {
    let mut h = Recovering::new(Semantics::Legacy(LegacyBug::NoOpWhileChannelsRecover), true);
    h.step(TaskEvent::RecoveryStarted { channels: 1 });
    h.step(TaskEvent::RecoveryFinished);
    assert_eq!(
        h.s.recovery(),
        Some(Recovery::NoOpAwaitingChannels { channels: 1 })
    );
    assert_eq!(h.s.recovery_trigger(), RecoveryTrigger::NoOp);
    // Neither taken nor declined: no write result, no mail, no answer.
    assert_eq!(h.step(barrier(1)), (vec![], Outcome::Applied));
    assert_eq!(h.m.unanswered(), &[cp(1)]);
    // The coordinator expires it and says so: still no answer.
    let (fx, _) = h.step(TaskEvent::NotifyAborted { checkpoint: cp(1) });
    assert_eq!(fx, vec![E::Operators(OperatorNotice::Aborted(cp(1)))]);
    assert_eq!(h.m.unanswered(), &[cp(1)]);
    h.step(TaskEvent::ChannelRecovered);
    assert_eq!(h.s.recovery(), None);
    // The fixed task keeps inserting barriers until the channel recovered.
    let mut f = Recovering::new(Semantics::Fixed, true);
    f.step(TaskEvent::RecoveryStarted { channels: 1 });
    f.step(TaskEvent::RecoveryFinished);
    assert_eq!(f.s.recovery_trigger(), RecoveryTrigger::InsertBarriers);
}

#[test]
fn a_start_without_the_capture_breaks_recovered_input_captured() {
    let config = TaskConfig {
        replays_channel_state: true,
        ..TaskConfig::default()
    };
    let mut s = TaskState::new(config).unwrap_or_else(|e| panic!("{e}"));
    let start = [E::Writer(WriterCommand::Start(cp(1)))];
    // Before the state was fetched, no checkpoint may start at all.
    let v = check_recovery_capture(&s, &start)
        .err()
        .map(|v| v.invariant);
    assert_eq!(v, Some(names::RECOVERED_INPUT_CAPTURED));
    s.apply(Millis(0), TaskEvent::RecoveryStarted { channels: 2 });
    let v = check_recovery_capture(&s, &start)
        .err()
        .map(|v| v.invariant);
    assert_eq!(v, Some(names::RECOVERED_INPUT_CAPTURED));
    // A capture of fewer channels than still recover is not enough.
    let short = [
        start[0],
        E::Writer(WriterCommand::CaptureRecovered {
            checkpoint: cp(1),
            channels: 1,
        }),
    ];
    assert!(check_recovery_capture(&s, &short).is_err());
    let full = [
        start[0],
        E::Writer(WriterCommand::CaptureRecovered {
            checkpoint: cp(1),
            channels: 2,
        }),
    ];
    assert_eq!(check_recovery_capture(&s, &full), Ok(()));
}

#[test]
fn a_recovering_task_survives_a_snapshot() {
    let mut h = Recovering::new(Semantics::Fixed, true);
    h.step(TaskEvent::RecoveryStarted { channels: 3 });
    h.step(TaskEvent::RecoveryFinished);
    let back = TaskState::from_snapshot(h.s.snapshot()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, h.s);
    assert_eq!(
        back.recovery(),
        Some(Recovery::AwaitingConsumption {
            channels: 3,
            drained: true
        })
    );
}
