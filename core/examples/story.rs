//! Drives the coordinator through a whole story and prints every event, the
//! effects it produced and its outcome. The "host" here is a loop: it sorts
//! each effect with `ckpt_core::route`, answers every I/O request at once
//! (`IoRequest::answer`), delivers each trigger to pretend tasks that
//! acknowledge at once (`ToCoordinator::event` adds the envelope), and
//! sleeps until `next_deadline()` when nothing else is left.
//!
//! `cargo run -p ckpt-core --example story`

use std::collections::VecDeque;

use ckpt_core::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, IoAnswer,
    JobStatus, TriggerKind,
};
use ckpt_core::invariants::checked::{coordinator_step, Rigor};
use ckpt_core::invariants::coordinator::HandleLedger;
use ckpt_core::route::{TaskMessage, ToCoordinator};
use ckpt_core::{CheckpointId, DeclineReason, JobId, Millis, StateHandle};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let job = JobId(7);
    let mut settings = CoordinatorSettings::with_tasks(job, 3);
    settings.interval_ms = 100;
    settings.timeout_ms = 1_000;
    settings.tolerable_failures = 1;
    let mut state = CoordinatorState::from_settings(settings)?;
    let mut ledger = HandleLedger::new();
    let mut next_id = 1u64;
    let mut next_handle = 100u64;
    let mut now = Millis(0);
    let mut inbox: VecDeque<CoordinatorEvent> = VecDeque::new();
    inbox.push_back(CoordinatorEvent::StartScheduler);

    let mut step_no = 0;
    // The story: three periodic checkpoints are triggered (the third is
    // declined by task 2), a savepoint completes, then the job shuts down.
    let mut round = 0;
    loop {
        let Some(event) = inbox.pop_front() else {
            round += 1;
            match round {
                1..=3 => {
                    // Nothing left to do: sleep until the next timer.
                    let Some((timer, at)) = state.next_deadline() else {
                        break;
                    };
                    now = at;
                    inbox.push_back(CoordinatorEvent::TimerFired { timer });
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
        let (t, verdict) = coordinator_step(&mut ledger, &state, now, &event, Rigor::Full);
        println!("#{step_no:<3} @{now:<5} {event:?}");
        for e in &t.step.effects {
            println!("        -> {e:?}");
        }
        println!("        => {:?}", t.step.outcome);
        verdict?;
        state = t.state;
        for e in &t.step.effects {
            match e {
                CoordinatorEffect::Io {
                    request: req,
                    generation: _,
                } => {
                    inbox.push_back(req.answer(IoAnswer::Ok {
                        id: CheckpointId(next_id),
                    }));
                    if req.checkpoint().is_none() {
                        next_id += 1;
                    }
                }
                CoordinatorEffect::Rpc {
                    message:
                        TaskMessage::Trigger {
                            checkpoint,
                            timestamp: _,
                            options: _,
                        },
                    task: _,
                    attempt: _,
                    generation: _,
                } => {
                    let checkpoint = *checkpoint;
                    // The source injects barriers; every task acks, except
                    // that task 2 declines the third checkpoint.
                    for task in state.config().tasks_to_wait().to_vec() {
                        let attempt = state
                            .task_status(task)
                            .map(|s| s.attempt)
                            .unwrap_or_default();
                        let reply = if checkpoint == CheckpointId(3) && task.0 == 2 {
                            ToCoordinator::Decline {
                                checkpoint,
                                reason: DeclineReason::SnapshotFailed,
                            }
                        } else {
                            next_handle += 1;
                            ToCoordinator::Ack {
                                checkpoint,
                                handle: StateHandle(next_handle),
                            }
                        };
                        inbox.push_back(reply.event(job, task, attempt));
                    }
                }
                // Notifications to tasks, timers (read back through
                // `next_deadline`), discards, reports and job commands need
                // nothing from this pretend host.
                CoordinatorEffect::Rpc {
                    message:
                        TaskMessage::NotifyComplete {
                            checkpoint: _,
                            timestamp: _,
                        }
                        | TaskMessage::NotifyAborted {
                            checkpoint: _,
                            latest_completed: _,
                            timestamp: _,
                        },
                    task: _,
                    attempt: _,
                    generation: _,
                }
                | CoordinatorEffect::Timer { timer: _, at: _ }
                | CoordinatorEffect::Discard {
                    generation: _,
                    checkpoint: _,
                    handle: _,
                }
                | CoordinatorEffect::Job(_)
                | CoordinatorEffect::Report(_) => {}
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
