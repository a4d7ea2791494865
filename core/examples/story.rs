//! Drives the coordinator through a whole story and prints every event, the
//! effects it produced and its outcome. The "host" here is a loop that answers
//! each I/O effect immediately and delivers each trigger to a pretend task
//! that acknowledges at once.
//!
//! `cargo run -p ckpt-core --example story`

use std::collections::VecDeque;

use ckpt_core::coordinator::{
    reduce, CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, JobStatus,
    Timer, TriggerKind,
};
use ckpt_core::{CheckpointId, DeclineReason, JobId, Millis, StateHandle};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let job = JobId(7);
    let mut settings = CoordinatorSettings::with_tasks(job, 3);
    settings.interval_ms = 100;
    settings.timeout_ms = 1_000;
    settings.tolerable_failures = 1;
    let mut state = CoordinatorState::from_settings(settings)?;
    let mut ledger = ckpt_core::invariants::coordinator::HandleLedger::new();
    let mut next_id = 1u64;
    let mut next_handle = 100u64;
    let mut now = Millis(0);
    let mut inbox: VecDeque<CoordinatorEvent> = VecDeque::new();
    inbox.push_back(CoordinatorEvent::StartScheduler);

    let mut step_no = 0;
    // The story: two periodic checkpoints complete, the third is declined by
    // task 2, a savepoint completes, then the job shuts down.
    let mut round = 0;
    loop {
        let Some(event) = inbox.pop_front() else {
            round += 1;
            match round {
                1..=3 => {
                    now = state.timer_deadline(Timer::Periodic).unwrap_or(now);
                    inbox.push_back(CoordinatorEvent::TimerFired {
                        timer: Timer::Periodic,
                    });
                }
                4 => inbox.push_back(CoordinatorEvent::Trigger {
                    kind: TriggerKind::Savepoint {
                        target: "/savepoints/demo".into(),
                    },
                }),
                5 => inbox.push_back(CoordinatorEvent::Shutdown {
                    status: JobStatus::Finished,
                }),
                _ => break,
            }
            continue;
        };
        step_no += 1;
        let before = state.clone();
        let t = reduce(&state, now, event.clone());
        println!("#{step_no:<3} @{now:<5} {event:?}");
        for e in &t.step.effects {
            println!("        -> {e:?}");
        }
        println!("        => {:?}", t.step.outcome);
        let step = ckpt_core::coordinator::Step {
            effects: t.step.effects.clone(),
            outcome: t.step.outcome.clone(),
            clock: t.step.clock,
        };
        ckpt_core::invariants::coordinator::check_all(
            &mut ledger,
            &before,
            &event,
            &step,
            &t.state,
        )?;
        state = t.state;
        for e in t.step.effects {
            match e {
                CoordinatorEffect::AllocateCheckpointId { request } => {
                    inbox.push_back(CoordinatorEvent::CheckpointIdAllocated {
                        request,
                        result: Ok(CheckpointId(next_id)),
                    });
                    next_id += 1;
                }
                CoordinatorEffect::TriggerTask { checkpoint, .. } => {
                    // The source injects barriers; every task acks, except
                    // that task 2 declines the third checkpoint.
                    for task in state.config().tasks_to_wait().to_vec() {
                        let attempt = state
                            .task_status(task)
                            .map(|s| s.attempt)
                            .unwrap_or_default();
                        if checkpoint == CheckpointId(3) && task.0 == 2 {
                            inbox.push_back(CoordinatorEvent::Decline {
                                job,
                                task,
                                attempt,
                                checkpoint,
                                reason: DeclineReason::SnapshotFailed,
                            });
                        } else {
                            next_handle += 1;
                            inbox.push_back(CoordinatorEvent::Acknowledge {
                                job,
                                task,
                                attempt,
                                checkpoint,
                                state: Some(StateHandle(next_handle)),
                            });
                        }
                    }
                }
                CoordinatorEffect::FinalizeCheckpoint { checkpoint, .. } => {
                    inbox.push_back(CoordinatorEvent::FinalizeDone {
                        checkpoint,
                        result: Ok(()),
                    });
                }
                CoordinatorEffect::StoreCheckpoint { checkpoint } => {
                    inbox.push_back(CoordinatorEvent::StoreDone {
                        checkpoint,
                        result: Ok(()),
                    });
                }
                CoordinatorEffect::TriggerMasterHooks { checkpoint, .. } => {
                    inbox.push_back(CoordinatorEvent::MasterHooksDone {
                        checkpoint,
                        result: Ok(()),
                    });
                }
                CoordinatorEffect::ScheduleTimer { .. }
                | CoordinatorEffect::CancelTimer { .. }
                | CoordinatorEffect::DiscardState { .. }
                | CoordinatorEffect::NotifyComplete { .. }
                | CoordinatorEffect::NotifyAborted { .. }
                | CoordinatorEffect::CheckpointCompleted { .. }
                | CoordinatorEffect::CheckpointAborted { .. }
                | CoordinatorEffect::RequestFailed { .. }
                | CoordinatorEffect::FailJob { .. }
                | CoordinatorEffect::ResetIdCounter { .. }
                | CoordinatorEffect::RestoreState { .. }
                | CoordinatorEffect::ShutdownServices { .. } => {}
            }
        }
    }
    let completed: Vec<_> = state.completed().map(|c| c.id().0).collect();
    println!(
        "\n{step_no} events; retained completed checkpoints {completed:?}; {} handles delivered, {} discarded; every invariant held",
        ledger.delivered(),
        ledger.discarded()
    );
    Ok(())
}
