//! The RPC network between the coordinator and the task attempts: bounded
//! inboxes, and seeded faults (delay, loss) for the simulation. Data
//! channels between tasks are not here: they are per-link FIFO and lossless
//! (see the task driver). The messages the coordinator driver's inbox
//! takes ([`ToCoordinator`]: RPCs, shutdown, disposing of a savepoint) are
//! defined here, beside the network that delivers into it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::coordinator::{CoordinatorEvent, JobStatus};
use crate::host::store::StoreError;
use crate::task::TaskEvent;
use crate::types::{AttemptNo, CheckpointId, StateHandle, TaskId};

/// Bound of the coordinator's inbox (RPCs from tasks and the user). A full
/// inbox loses a task's RPC, which the coordinator handles like any lost
/// RPC (a timeout); [`super::HostStats::rpc_dropped_full`] counts it. A
/// user's [`super::JobHandle::trigger`] is refused instead, with
/// [`super::JobError::InboxFull`] (not counted).
pub const COORDINATOR_INBOX_MAX: usize = 1 << 16;
/// Bound of a task attempt's RPC inbox (trigger, notify-complete,
/// notify-aborted) before they are moved into the mailbox.
pub const TASK_INBOX_MAX: usize = 1_024;

/// Seeded faults of the RPC network (coordinator <-> tasks). Off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Probability in parts per million that one RPC is lost.
    pub drop_ppm: u32,
    /// Each RPC is delayed by a uniform 0..=`delay_max_ms` (it may overtake
    /// others: the RPC network reorders).
    pub delay_max_ms: u64,
    /// Seed of the fault generator.
    pub seed: u64,
}

impl FaultPlan {
    /// Whether any fault is configured.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.drop_ppm > 0 || self.delay_max_ms > 0
    }
}

/// SplitMix64: a small, seeded, well-distributed generator (deterministic
/// across platforms).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value in `0..=max`.
    pub fn below_or_eq(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(n) => self.next_u64() % n,
            None => self.next_u64(),
        }
    }
}

/// The address of one task attempt's RPC inbox.
#[derive(Clone, Debug)]
pub(crate) struct TaskInbox {
    pub attempt: AttemptNo,
    pub tx: mpsc::Sender<TaskEvent>,
}

/// Counters kept by the network.
#[derive(Debug, Default)]
pub(crate) struct NetCounters {
    pub dropped_fault: AtomicU64,
    pub dropped_full: AtomicU64,
    pub dropped_stale: AtomicU64,
}

/// The RPC network.
pub(crate) struct Net {
    plan: FaultPlan,
    rng: Mutex<SplitMix64>,
    coordinator: mpsc::Sender<ToCoordinator>,
    tasks: Mutex<Vec<Option<TaskInbox>>>,
    pub counters: NetCounters,
}

enum Route {
    Coordinator(CoordinatorEvent),
    Task(TaskId, AttemptNo, TaskEvent),
}

impl Net {
    pub fn new(
        plan: FaultPlan,
        tasks: usize,
        coordinator: mpsc::Sender<ToCoordinator>,
    ) -> Arc<Self> {
        Arc::new(Net {
            plan,
            rng: Mutex::new(SplitMix64::new(plan.seed)),
            coordinator,
            tasks: Mutex::new(vec![None; tasks]),
            counters: NetCounters::default(),
        })
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<Option<TaskInbox>>> {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers (or replaces) the inbox of a task's current attempt.
    pub fn register(&self, task: TaskId, inbox: Option<TaskInbox>) {
        if let Some(slot) = self.tasks().get_mut(task.0 as usize) {
            *slot = inbox;
        }
    }

    /// Sends an RPC to the coordinator (an ack or a decline from a task).
    pub fn to_coordinator(self: &Arc<Self>, event: CoordinatorEvent) {
        self.route(Route::Coordinator(event));
    }

    /// Sends an RPC to one task attempt; dropped if that attempt is not the
    /// task's current one when it arrives.
    pub fn to_task(self: &Arc<Self>, task: TaskId, attempt: AttemptNo, event: TaskEvent) {
        self.route(Route::Task(task, attempt, event));
    }

    fn route(self: &Arc<Self>, route: Route) {
        if !self.plan.is_active() {
            self.deliver(route);
            return;
        }
        let (lost, delay_ms) = {
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let lost = rng.below_or_eq(999_999) < u64::from(self.plan.drop_ppm);
            (lost, rng.below_or_eq(self.plan.delay_max_ms))
        };
        if lost {
            self.counters.dropped_fault.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if delay_ms == 0 {
            self.deliver(route);
            return;
        }
        let net = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            net.deliver(route);
        });
    }

    fn deliver(&self, route: Route) {
        match route {
            Route::Coordinator(event) => {
                if self
                    .coordinator
                    .try_send(ToCoordinator::Rpc(event))
                    .is_err()
                {
                    self.counters.dropped_full.fetch_add(1, Ordering::Relaxed);
                }
            }
            Route::Task(task, attempt, event) => {
                let inbox = self.tasks().get(task.0 as usize).cloned().flatten();
                match inbox {
                    Some(inbox) if inbox.attempt == attempt => {
                        if inbox.tx.try_send(event).is_err() {
                            self.counters.dropped_full.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Some(_) | None => {
                        self.counters.dropped_stale.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

/// Messages to the coordinator driver.
pub(crate) enum ToCoordinator {
    /// An RPC from a task (ack, decline) or a user request.
    Rpc(CoordinatorEvent),
    /// Stop: shut the coordinator down with this status and stop every task.
    Shutdown(JobStatus, oneshot::Sender<()>),
    /// The user disposes of a savepoint: the store first, then the
    /// coordinator (`DisposeSavepoint`).
    DisposeSavepoint(
        CheckpointId,
        oneshot::Sender<Result<Vec<StateHandle>, StoreError>>,
    ),
}
