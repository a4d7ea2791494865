//! The coordinator process: the coordinator reducer, the [`ObjStore`] it
//! commits to, and a TCP listener for one task manager ([`crate::manager`])
//! that runs every task of the job.
//!
//! # Shape
//!
//! [`run`] reads the store's log for the generation to claim (one above
//! the newest) and waits for a task manager. The handshake
//! ([`crate::wire`]) announces that generation; on the first `Ready`
//! (which says how far the sinks' output is committed) the store is
//! opened under it (the claim is a conditional create in the log, so a
//! concurrent leader that claimed first makes this one fail) and
//! recovered, the coordinator gets `Recover` and `Restore { Latest }`, and
//! the task manager a `Deploy` of every task restored from that
//! checkpoint; the periodic scheduler starts.
//!
//! The driver is one tokio task, as the in-process host's: the events in
//! (acks and declines from the task manager, its failure reports, a lost
//! connection, timers) are applied one at a time and the effects carried
//! out in order, the answers to its own store I/O applied before the next
//! event is read. Store I/O is `object_store`'s async I/O awaited on the
//! driver (`LocalFileSystem` runs each file operation on tokio's blocking
//! pool, so it does not block a runtime worker, and does not fsync; the
//! driver itself still waits for it).
//!
//! **Failover** is global. A lost connection to the task manager (it died,
//! or the network broke) fails every attempt (`TaskFailed` each), restores
//! the latest completed checkpoint (`Restore { Latest }`, checked against
//! the store's latest: if they differ nothing is deployed and [`run`]
//! returns [`CoordinatorError::Recover`]) and waits for a task manager to
//! say `Ready` again; it then deploys every task under the next attempt
//! (`TaskRunning` each).
//! A failure report (`Failed`) from a connected task manager does the same
//! without waiting. A checkpoint in flight when the connection is lost is
//! aborted by the reducer (its tasks failed); one already finalizing or
//! storing completes first, since the driver answers its own I/O before
//! it reads the next event.
//!
//! A coordinator that meets a task manager which served a newer generation
//! is deposed: it refuses ([`Refusal::StaleGeneration`]) and [`run`]
//! returns [`CoordinatorError::Deposed`]. Its store handle is fenced by
//! the log anyway: once a newer leader has claimed the store, every write
//! of this generation is refused (`StoreError::StaleGeneration`), and the
//! first such refusal stops the driver ([`CoordinatorError::Fenced`]: the
//! task manager's connection is closed; nothing more is committed).
//!
//! A task manager that restarted has forgotten the generation it served,
//! so its `Hello` cannot depose an old leader. So on every `Ready` after
//! the first the driver reads the log (writing nothing) before it deploys
//! its restore target again: a newer claim fences it as a refused write
//! does; a log it cannot read stops it ([`CoordinatorError::Store`]); and
//! output committed beyond the restore target is refused
//! (`StoreError::BehindCommitted`), as the first `Ready`'s open refuses it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ckpt_core::coordinator::{
    CoordinatorEffect, CoordinatorEvent, CoordinatorSettings, CoordinatorState, IoAnswer,
    IoRequest, JobCommand, JobStatus, Report, RestoreSource, Timer,
};
use ckpt_core::host::runtime::statefile;
use ckpt_core::host::store::{Discarded, OpenOptions, StateCheck, StoreError};
use ckpt_core::invariants::coordinator::{check_all, HandleLedger};
use ckpt_core::{
    AttemptNo, CheckpointId, Generation, IoFailure, JobId, Millis, StateHandle, TaskId,
};
use object_store::ObjectStore;
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::objstore::ObjStore;
use crate::wire::{self, Refusal, ToCoordinatorMsg, ToManagerMsg, WireError};

/// Bound of the queue of messages to the task manager's connection; a full
/// queue loses the message (as a lossy network would: a lost trigger or
/// notification becomes a timeout or a later commit).
pub const SEND_QUEUE_MAX: usize = 4_096;

/// How long the coordinator waits for `Stop` to be written when the job
/// ends.
pub const STOP_FLUSH: Duration = Duration::from_secs(5);

/// How the coordinator process runs.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    /// The coordinator's settings (job, task lists, interval, timeout,
    /// retained).
    pub settings: CoordinatorSettings,
    /// Number of tasks (ids `0..tasks`), all run by one task manager.
    pub tasks: u32,
    /// Check every coordinator step against `ckpt_core::invariants`.
    pub check_invariants: bool,
}

/// What a finished coordinator did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoordinatorReport {
    /// The generation it claimed.
    pub generation: Generation,
    /// The checkpoint restored at start (`None`: a fresh start).
    pub restored_at_start: Option<CheckpointId>,
    /// Checkpoints it committed.
    pub completed: u64,
    /// Failovers (lost connections and failure reports).
    pub failovers: u64,
    /// `Rpc` messages of another generation dropped on the task manager's
    /// connection (the state an ack of another generation carries is not
    /// this leader's to delete: a newer leader may hold it, and an older
    /// one's is cleaned up by the next start). Messages on a connection
    /// that is no longer the task manager's are dropped uncounted.
    pub dropped_stale: u64,
    /// Acks and declines of an attempt of this generation that is not
    /// current (failed over, or never deployed), applied: the reducer
    /// ignores them and discards the state an ack carries.
    pub stale_applied: u64,
    /// Invariant and host-contract violations, in order (must be empty).
    pub violations: Vec<String>,
}

/// Why the coordinator stopped without finishing the job.
#[derive(Debug, Error)]
pub enum CoordinatorError {
    /// The settings are invalid.
    #[error("invalid coordinator settings: {0}")]
    Config(#[from] ckpt_core::coordinator::ConfigError),
    /// The store refused to open or recover (another leader claimed the
    /// generation first, a restore behind the committed output, damage),
    /// could not be read or written (at the open, or in the check before a
    /// redeploy), or a later `Ready` reported output committed beyond the
    /// checkpoint to restore (`BehindCommitted`). The binary exits 1 for
    /// the store errors a restart may cure (an object that could not be
    /// read or written, an unknown outcome), 3 for the others.
    #[error("checkpoint store: {0}")]
    Store(#[from] StoreError),
    /// The coordinator refused what the store recovered, or a failover's
    /// restore target was not the store's latest checkpoint.
    #[error("the coordinator refused the recovered checkpoints: {0}")]
    Recover(String),
    /// A task manager served a newer leader: this one is deposed.
    #[error("deposed: {0}")]
    Deposed(Refusal),
    /// The store refused a write of this coordinator's generation, or the
    /// check before a redeploy read a newer claim: a newer leader has
    /// claimed the store, and this one stops.
    #[error("fenced by the store: {0}")]
    Fenced(StoreError),
    /// A commit's outcome is unknown ([`StoreError::OutcomeUnknown`]), or
    /// the id counter could not be reset: the coordinator carried out
    /// nothing more and stopped, as after a crash; start a new one, whose
    /// recovery reads the store.
    #[error("halted: {0}")]
    Halted(StoreError),
    /// The listener failed.
    #[error("listener: {0}")]
    Listen(std::io::Error),
}

/// The store's check of the state files of the checkpoint to restore.
fn state_check() -> StateCheck {
    Arc::new(|checkpoint, handle, bytes| {
        statefile::decode_for(checkpoint, handle, bytes).map(|_| ())
    })
}

enum Inbound {
    Msg(u64, ToCoordinatorMsg),
    Closed(u64, WireError),
}

struct Manager {
    conn: u64,
    tx: mpsc::Sender<ToManagerMsg>,
    /// The connection's writer (it ends after `Stop` or a refusal).
    sending: tokio::task::JoinHandle<()>,
    /// Said `Ready`: its old attempts are stopped.
    ready: bool,
}

struct Driver {
    cfg: CoordinatorConfig,
    job: JobId,
    objects: Arc<dyn ObjectStore>,
    generation: Generation,
    state: CoordinatorState,
    store: Option<ObjStore>,
    ledger: Option<HandleLedger>,
    start: Instant,
    timers: BTreeMap<Timer, Millis>,
    answers: VecDeque<CoordinatorEvent>,
    manager: Option<Manager>,
    /// The attempt each task runs while deployed; `None` between a failover
    /// and the next deploy.
    deployed: Option<Vec<AttemptNo>>,
    next_attempt: Vec<AttemptNo>,
    restore_target: Option<(CheckpointId, Vec<StateHandle>)>,
    fail_job: bool,
    finished: bool,
    /// The connection of the task manager told to `Stop` when the job
    /// ended: the coordinator exits once it hung up (or after
    /// [`STOP_FLUSH`]).
    stopped_conn: Option<u64>,
    /// The store refused a write as from a deposed leader, or the check
    /// before a redeploy found a newer leader's claim.
    fenced: Option<StoreError>,
    /// A commit's outcome is unknown ([`StoreError::OutcomeUnknown`]), or
    /// the id counter could not be reset: the driver carries out nothing
    /// more and stops, as after a crash.
    halted: Option<StoreError>,
    /// A failover's restore target is not the store's latest checkpoint:
    /// nothing is deployed, and the driver stops
    /// ([`CoordinatorError::Recover`]) for a new start to recover from the
    /// store. Not reached by a correct reducer and store (both hold the
    /// same commits: the driver applies a commit's answer only once the
    /// store has made it); a disagreement is not deployed on a guess.
    refused: Option<String>,
    report: CoordinatorReport,
    inbox: mpsc::Sender<Inbound>,
    /// The writer queues of connections that have not said `Hello` yet.
    conns: BTreeMap<u64, (mpsc::Sender<ToManagerMsg>, tokio::task::JoinHandle<()>)>,
}

/// Logs one line on stdout (the tests and an operator read these).
fn say(line: &str) {
    println!("coordinator: {line}");
}

/// Runs the coordinator on `listener` with the store on `objects` until
/// the task manager reports the output complete (then the job is shut
/// down as finished and the task manager told to stop).
pub async fn run(
    cfg: CoordinatorConfig,
    objects: Arc<dyn ObjectStore>,
    listener: TcpListener,
) -> Result<CoordinatorReport, CoordinatorError> {
    let job = cfg.settings.job;
    let state = CoordinatorState::from_settings(cfg.settings.clone())?;
    let generation = ObjStore::next_generation(&*objects, job).await?;
    let addr = listener.local_addr().map_err(CoordinatorError::Listen)?;
    say(&format!("listening on {addr} generation {generation}"));
    let (tx, mut rx) = mpsc::channel(SEND_QUEUE_MAX);
    let n = cfg.tasks as usize;
    let mut d = Driver {
        job,
        objects,
        generation,
        state,
        store: None,
        ledger: cfg.check_invariants.then(HandleLedger::new),
        start: Instant::now(),
        timers: BTreeMap::new(),
        answers: VecDeque::new(),
        manager: None,
        deployed: None,
        next_attempt: vec![AttemptNo(0); n],
        restore_target: None,
        fail_job: false,
        finished: false,
        stopped_conn: None,
        fenced: None,
        halted: None,
        refused: None,
        report: CoordinatorReport {
            generation,
            ..CoordinatorReport::default()
        },
        inbox: tx,
        conns: BTreeMap::new(),
        cfg,
    };
    let mut next_conn = 0u64;
    loop {
        d.drain_answers().await;
        if let Some(e) = d.halted.take() {
            // No `Shutdown` (it would hand the commit over in doubt, to be
            // settled by a guess): the next leader's recovery reads the
            // store. The task manager's connection is closed, as by a crash.
            say(&format!(
                "halting: {e}; the next start recovers from the store"
            ));
            d.hang_up().await;
            return Err(CoordinatorError::Halted(e));
        }
        if let Some(why) = d.refused.take() {
            say(&format!(
                "stopping: {why}; the next start recovers from the store"
            ));
            d.hang_up().await;
            return Err(CoordinatorError::Recover(why));
        }
        if let Some(e) = d.fenced.take() {
            say(&format!(
                "fenced by the store ({e}): a newer leader runs; stopping"
            ));
            d.hang_up().await;
            return Err(CoordinatorError::Fenced(e));
        }
        if d.finished {
            // The task manager reads `Stop` and hangs up first. Exiting at
            // once resets the connection under whatever it is still
            // sending (an ack, its output-complete), and a send that fails
            // before it read `Stop` makes it retry a coordinator that is
            // gone until its back-off gives up.
            if let Some(conn) = d.stopped_conn {
                let _ = tokio::time::timeout(STOP_FLUSH, async {
                    while let Some(inbound) = rx.recv().await {
                        if matches!(inbound, Inbound::Closed(c, _) if c == conn) {
                            break;
                        }
                    }
                })
                .await;
            }
            return Ok(d.report);
        }
        if d.fail_job {
            d.fail_job = false;
            d.failover("tolerable checkpoint failures exceeded").await;
            d.deploy_if_ready().await;
            continue;
        }
        let deadline = d
            .timers
            .values()
            .min()
            .map(|at| d.start + Duration::from_millis(at.0));
        tokio::select! {
            biased;
            () = async {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            } => d.fire_timers().await,
            Some(inbound) = rx.recv() => match inbound {
                Inbound::Msg(conn, msg) => d.on_message(conn, msg).await?,
                Inbound::Closed(conn, why) => d.on_closed(conn, &why).await,
            },
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    next_conn += 1;
                    d.accept(next_conn, stream, peer);
                }
                Err(e) => say(&format!("accept failed: {e}")),
            },
        }
    }
}

impl Driver {
    fn now(&self) -> Millis {
        Millis(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    fn violation(&mut self, v: String) {
        say(&format!("VIOLATION {v}"));
        self.report.violations.push(v);
    }

    /// A new connection: its reader feeds the driver's inbox, its writer
    /// drains a bounded queue. It becomes the task manager on `Hello`.
    fn accept(&mut self, conn: u64, stream: tokio::net::TcpStream, peer: std::net::SocketAddr) {
        let (mut reader, mut writer) = match wire::split(stream) {
            Ok(halves) => halves,
            Err(e) => {
                say(&format!("connection from {peer}: {e}"));
                return;
            }
        };
        let (tx, mut out) = mpsc::channel::<ToManagerMsg>(SEND_QUEUE_MAX);
        let sending = tokio::spawn(async move {
            while let Some(m) = out.recv().await {
                let last = matches!(m, ToManagerMsg::Refused(_) | ToManagerMsg::Stop { .. });
                if writer.send(&m).await.is_err() || last {
                    break;
                }
            }
        });
        let inbox = self.inbox.clone();
        tokio::spawn(async move {
            let mut first = true;
            loop {
                match reader.recv::<ToCoordinatorMsg>().await {
                    Ok(msg) => {
                        if first {
                            first = false;
                            if !matches!(msg, ToCoordinatorMsg::Hello { .. }) {
                                let _ = inbox
                                    .send(Inbound::Closed(
                                        conn,
                                        WireError::Unexpected(format!("{msg:?} before Hello")),
                                    ))
                                    .await;
                                return;
                            }
                        }
                        if inbox.send(Inbound::Msg(conn, msg)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = inbox.send(Inbound::Closed(conn, e)).await;
                        return;
                    }
                }
            }
        });
        self.conns.insert(conn, (tx, sending));
    }

    async fn on_message(
        &mut self,
        conn: u64,
        msg: ToCoordinatorMsg,
    ) -> Result<(), CoordinatorError> {
        match msg {
            ToCoordinatorMsg::Hello {
                job,
                tasks,
                generation,
                running,
            } => {
                let Some((tx, sending)) = self.conns.remove(&conn) else {
                    return Ok(());
                };
                let refusal = if job != self.job {
                    Some(Refusal::WrongJob {
                        expected: self.job,
                        got: job,
                    })
                } else if tasks != self.cfg.tasks {
                    Some(Refusal::TaskCount {
                        expected: self.cfg.tasks,
                        got: tasks,
                    })
                } else if let Some(newer) = generation.filter(|g| *g > self.generation) {
                    let r = Refusal::StaleGeneration {
                        got: self.generation,
                        newest: newer,
                    };
                    say(&format!(
                        "refusing connection {conn}: {r}; this leader is deposed"
                    ));
                    let _ = tx.try_send(ToManagerMsg::Refused(r.clone()));
                    return Err(CoordinatorError::Deposed(r));
                } else if generation == Some(self.generation) {
                    running
                        .iter()
                        .find(|(t, a)| !self.is_current(*t, *a))
                        .map(|(task, attempt)| Refusal::StaleAttempt {
                            task: *task,
                            attempt: *attempt,
                            generation: self.generation,
                        })
                } else {
                    None
                };
                if let Some(r) = refusal {
                    say(&format!("refusing connection {conn}: {r}"));
                    let _ = tx.try_send(ToManagerMsg::Refused(r));
                    return Ok(());
                }
                if let Some(old) = self.manager.take() {
                    // A new task manager replaces one whose connection has
                    // not broken yet (it may be half-open): its attempts are
                    // failed over.
                    say(&format!(
                        "connection {conn} replaces connection {}",
                        old.conn
                    ));
                    self.lost_manager("replaced by a new connection").await;
                }
                let _ = tx.try_send(ToManagerMsg::Welcome {
                    job: self.job,
                    generation: self.generation,
                });
                self.manager = Some(Manager {
                    conn,
                    tx,
                    sending,
                    ready: false,
                });
                say(&format!("task manager on connection {conn} welcomed"));
            }
            ToCoordinatorMsg::Ready { committed } => {
                if !self.is_manager(conn) {
                    return Ok(());
                }
                if self.store.is_none() {
                    self.open_store(committed).await?;
                } else if !self.may_redeploy(committed).await? {
                    return Ok(());
                }
                if let Some(m) = self.manager.as_mut() {
                    m.ready = true;
                }
                self.deploy_if_ready().await;
            }
            ToCoordinatorMsg::Rpc { generation, event } => {
                if !self.is_manager(conn) {
                    return Ok(());
                }
                if generation != self.generation {
                    self.report.dropped_stale += 1;
                    return Ok(());
                }
                let sender = match &event {
                    CoordinatorEvent::Acknowledge {
                        job, task, attempt, ..
                    }
                    | CoordinatorEvent::Decline {
                        job, task, attempt, ..
                    } => (*job == self.job).then_some((*task, *attempt)),
                    _ => None,
                };
                match sender {
                    Some((task, attempt)) => {
                        // An ack of an attempt that is no longer current is
                        // applied too: the reducer ignores it and discards
                        // the state it carries (dropped here, that state
                        // object stayed until the next start's clean-up).
                        if !self.is_current(task, attempt) {
                            self.report.stale_applied += 1;
                        }
                        self.apply(event).await;
                    }
                    None => {
                        self.close_manager(&format!(
                            "not an ack or decline of this job: {event:?}"
                        ))
                        .await;
                    }
                }
            }
            ToCoordinatorMsg::Failed {
                generation,
                task,
                attempt,
            } => {
                if !self.is_manager(conn) || generation != self.generation {
                    return Ok(());
                }
                if self.is_current(task, attempt) {
                    self.failover(&format!("task {task} attempt {attempt} failed"))
                        .await;
                    self.deploy_if_ready().await;
                }
            }
            ToCoordinatorMsg::OutputComplete { generation } => {
                if !self.is_manager(conn) || generation != self.generation {
                    return Ok(());
                }
                say("output complete: shutting the job down");
                self.apply(CoordinatorEvent::Shutdown {
                    status: JobStatus::Finished,
                })
                .await;
                self.drain_answers().await;
                if let Some(m) = self.manager.take() {
                    self.stopped_conn = Some(m.conn);
                    let _ =
                        m.tx.send(ToManagerMsg::Stop {
                            generation: self.generation,
                        })
                        .await;
                    // `Stop` is on the wire before the process may exit.
                    drop(m.tx);
                    let _ = tokio::time::timeout(STOP_FLUSH, m.sending).await;
                }
                self.finished = true;
            }
        }
        Ok(())
    }

    fn is_manager(&self, conn: u64) -> bool {
        self.manager.as_ref().is_some_and(|m| m.conn == conn)
    }

    fn is_current(&self, task: TaskId, attempt: AttemptNo) -> bool {
        self.deployed
            .as_ref()
            .and_then(|d| d.get(task.0 as usize))
            .is_some_and(|a| *a == attempt)
    }

    async fn on_closed(&mut self, conn: u64, why: &WireError) {
        self.conns.remove(&conn);
        if self.is_manager(conn) {
            say(&format!("task manager lost (connection {conn}: {why})"));
            self.manager = None;
            self.lost_manager("task manager lost").await;
        }
    }

    async fn close_manager(&mut self, why: &str) {
        say(&format!("closing the task manager's connection: {why}"));
        self.manager = None;
        self.lost_manager(why).await;
    }

    async fn lost_manager(&mut self, why: &str) {
        if self.deployed.is_some() {
            self.failover(why).await;
        }
    }

    /// Opens the store under this coordinator's generation (the claim),
    /// recovers, and restores the latest checkpoint.
    async fn open_store(
        &mut self,
        committed: Option<CheckpointId>,
    ) -> Result<(), CoordinatorError> {
        let retained = usize::try_from(self.cfg.settings.retained_max.max(1)).unwrap_or(1);
        let (store, recovery) = ObjStore::open(
            Arc::clone(&self.objects),
            OpenOptions {
                job: self.job,
                retained_max: retained,
                generation: self.generation,
                committed,
                check_state: Some(state_check()),
            },
        )
        .await?;
        self.store = Some(store);
        let outcome = self.apply(recovery.recover_event()).await;
        if !outcome.is_applied() {
            return Err(CoordinatorError::Recover(format!("{outcome:?}")));
        }
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        })
        .await;
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        let latest = recovery.latest().map(|c| c.checkpoint);
        if restored != latest {
            return Err(CoordinatorError::Recover(format!(
                "the coordinator restores {restored:?}, the store's latest is {latest:?}"
            )));
        }
        self.report.restored_at_start = restored;
        say(&format!(
            "recovered: restored checkpoint {} (store latest {}), {} damaged, {} orphaned state objects removed",
            show(restored),
            show(latest),
            recovery.damaged.len(),
            recovery.removed_orphans.len()
        ));
        self.apply(CoordinatorEvent::StartScheduler).await;
        Ok(())
    }

    /// Whether a task manager that is `Ready` again (after a failover, a
    /// reconnect, or a restart of its own) may get this coordinator's
    /// restore target. Asked on every `Ready` after the first, whose open
    /// of the store checks the same. (A failover within one task manager's
    /// session deploys without asking: a newer leader needs that task
    /// manager's `Ready` to get anywhere.)
    ///
    /// A task manager that restarted has forgotten the generation it
    /// served, so its `Hello` cannot depose this leader; a newer leader may
    /// have claimed the store since this one opened it, committed
    /// checkpoints and had their output committed (or left pending in the
    /// sink, which a restore deletes). So the store's log is read (no
    /// write): a newer claim fences this coordinator (nothing deployed; it
    /// stops, [`CoordinatorError::Fenced`]); a log that cannot be read
    /// deploys nothing and stops the coordinator
    /// ([`CoordinatorError::Store`]: it cannot tell whether it still
    /// leads; the next start recovers from the store). With no newer
    /// leader, sinks committed
    /// beyond the restore target mean the store has lost what they
    /// committed: refused as on the first `Ready`
    /// ([`StoreError::BehindCommitted`], exit 3), never deployed.
    async fn may_redeploy(
        &mut self,
        committed: Option<CheckpointId>,
    ) -> Result<bool, CoordinatorError> {
        let Some(store) = self.store.as_mut() else {
            return Ok(false);
        };
        match store.check_fence().await {
            Ok(()) => {}
            Err(e @ StoreError::StaleGeneration { .. }) => {
                self.fenced = Some(e);
                return Ok(false);
            }
            Err(e) => {
                say(&format!(
                    "cannot read the store's log to check for a newer leader: {e}; stopping"
                ));
                self.hang_up().await;
                return Err(CoordinatorError::Store(e));
            }
        }
        let target = self.restore_target.as_ref().map(|(c, _)| *c);
        if let Some(c) = committed.filter(|c| Some(*c) > target) {
            say(&format!(
                "the sinks committed {c}, beyond the checkpoint to restore {}: refusing to deploy",
                show(target)
            ));
            self.hang_up().await;
            return Err(CoordinatorError::Store(StoreError::BehindCommitted {
                committed: c,
                restorable: target,
                damaged: Vec::new(),
            }));
        }
        Ok(true)
    }

    /// Deploys every task under its next attempt when the task manager is
    /// ready and nothing is deployed.
    async fn deploy_if_ready(&mut self) {
        // Halted, fenced or refused: nothing more goes out (a failover cut
        // short by any of them left an old restore target behind).
        if self.deployed.is_some()
            || self.store.is_none()
            || self.halted.is_some()
            || self.fenced.is_some()
            || self.refused.is_some()
        {
            return;
        }
        let Some(m) = self.manager.as_ref().filter(|m| m.ready) else {
            return;
        };
        let attempts: Vec<(TaskId, AttemptNo)> = self
            .next_attempt
            .iter()
            .enumerate()
            .map(|(i, a)| (TaskId(u32::try_from(i).unwrap_or(u32::MAX)), *a))
            .collect();
        let first = self.next_attempt.iter().all(|a| a.0 == 0);
        let sent = m.tx.try_send(ToManagerMsg::Deploy {
            generation: self.generation,
            attempts: attempts.clone(),
            restore: self.restore_target.clone(),
        });
        if sent.is_err() {
            // The connection is gone or clogged: its close triggers the
            // next deploy.
            return;
        }
        say(&format!(
            "deployed attempts {} restored from checkpoint {}",
            attempts.first().map_or(0, |(_, a)| a.0),
            show(self.restore_target.as_ref().map(|(c, _)| *c))
        ));
        self.deployed = Some(attempts.iter().map(|(_, a)| *a).collect());
        for a in &mut self.next_attempt {
            *a = AttemptNo(a.0.saturating_add(1));
        }
        // The coordinator starts with attempt 0 of every task running; a
        // later attempt is announced.
        if !first {
            for (task, attempt) in attempts {
                self.answers
                    .push_back(CoordinatorEvent::TaskRunning { task, attempt });
            }
        }
    }

    /// Global failover, first half: every deployed attempt failed, the
    /// latest completed checkpoint restored. The deploy follows when a
    /// task manager is ready.
    async fn failover(&mut self, why: &str) {
        self.report.failovers += 1;
        let Some(deployed) = self.deployed.take() else {
            return;
        };
        for (i, attempt) in deployed.into_iter().enumerate() {
            if self.halted.is_some() {
                break;
            }
            let task = TaskId(u32::try_from(i).unwrap_or(u32::MAX));
            self.apply(CoordinatorEvent::TaskFailed { task, attempt })
                .await;
            self.drain_answers().await;
        }
        if self.halted.is_some() {
            return;
        }
        self.restore_target = None;
        self.apply(CoordinatorEvent::Restore {
            source: RestoreSource::Latest {
                error_if_none: false,
            },
        })
        .await;
        self.drain_answers().await;
        if self.halted.is_some() {
            return;
        }
        let restored = self.restore_target.as_ref().map(|(id, _)| *id);
        let latest = self.store.as_ref().and_then(|s| s.holdings().latest());
        if restored != latest {
            self.refused = Some(format!(
                "failover restores {restored:?} but the store's latest is {latest:?}"
            ));
            return;
        }
        say(&format!(
            "failover ({why}): restore checkpoint {} (store latest {})",
            show(restored),
            show(latest)
        ));
        // A connected task manager stops its attempts on the next Deploy.
    }

    async fn fire_timers(&mut self) {
        let now = self.now();
        let due: Vec<Timer> = self
            .timers
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(t, _)| *t)
            .collect();
        for timer in due {
            // Halted: no event after the crash point.
            if self.halted.is_some() {
                break;
            }
            if self.timers.get(&timer).is_some_and(|at| *at <= now) {
                self.timers.remove(&timer);
                self.apply(CoordinatorEvent::TimerFired { timer }).await;
                self.drain_answers().await;
            }
        }
    }

    /// Closes the task manager's connection once what was queued for it is
    /// sent (at most [`STOP_FLUSH`]).
    async fn hang_up(&mut self) {
        if let Some(m) = self.manager.take() {
            drop(m.tx);
            let _ = tokio::time::timeout(STOP_FLUSH, m.sending).await;
        }
    }

    async fn drain_answers(&mut self) {
        while let Some(ev) = self.answers.pop_front() {
            if self.halted.is_some() {
                return;
            }
            self.apply(ev).await;
        }
    }

    async fn apply(&mut self, event: CoordinatorEvent) -> ckpt_core::coordinator::Outcome {
        let now = self.now();
        let before = self.ledger.as_ref().map(|_| self.state.clone());
        let step = self.state.apply(now, event.clone());
        if let (Some(ledger), Some(before)) = (self.ledger.as_mut(), before.as_ref()) {
            if let Err(v) = check_all(ledger, before, &event, &step, &self.state) {
                let v = format!("coordinator: {v}");
                self.violation(v);
            }
        }
        for e in step.effects {
            // Halted: nothing more is carried out, as after a crash.
            if self.halted.is_some() {
                break;
            }
            self.carry_out(e).await;
        }
        step.outcome
    }

    async fn carry_out(&mut self, e: CoordinatorEffect) {
        match e {
            CoordinatorEffect::Timer {
                timer,
                at: Some(at),
            } => {
                self.timers.insert(timer, at);
            }
            CoordinatorEffect::Timer { timer, at: None } => {
                self.timers.remove(&timer);
            }
            CoordinatorEffect::Io {
                generation,
                request: req,
            } => {
                let answer = match self.io(generation, &req).await {
                    Ok(id) => IoAnswer::Ok { id },
                    // Neither answer is true: the request stays unanswered.
                    Err(e @ StoreError::OutcomeUnknown { .. }) => {
                        self.halted = Some(e);
                        return;
                    }
                    Err(e) => {
                        let why = e.to_string();
                        self.note_fence(e);
                        IoAnswer::Failed(IoFailure(why))
                    }
                };
                self.answers.push_back(req.answer(answer));
            }
            // The generation the reducer names is the one this driver
            // claimed (it recovered under it); the task manager checks it.
            CoordinatorEffect::Rpc {
                task,
                attempt,
                message,
                generation,
            } => {
                if let Some(m) = self.manager.as_ref().filter(|_| self.deployed.is_some()) {
                    // A full queue loses the RPC, as the network may.
                    let _ = m.tx.try_send(ToManagerMsg::Rpc {
                        generation,
                        task,
                        attempt,
                        message,
                    });
                }
            }
            CoordinatorEffect::Discard {
                handle,
                checkpoint,
                generation: _,
            } => self.discard(handle, checkpoint).await,
            CoordinatorEffect::Report(Report::Completed {
                checkpoint,
                request: _,
                savepoint: _,
            }) => {
                self.report.completed += 1;
                say(&format!("committed checkpoint {checkpoint}"));
            }
            CoordinatorEffect::Report(Report::Aborted {
                checkpoint: _,
                request: _,
                reason: _,
            })
            | CoordinatorEffect::Report(Report::RequestFailed {
                request: _,
                reason: _,
            })
            | CoordinatorEffect::Job(JobCommand::ShutdownServices(_)) => {}
            CoordinatorEffect::Job(JobCommand::Fail(_)) => self.fail_job = true,
            // Stop-with-savepoint is not offered by this command.
            CoordinatorEffect::Job(JobCommand::Stop {
                savepoint,
                drain: _,
            }) => self.violation(format!("stop with savepoint {savepoint}: not requested")),
            // No task reports `TaskFinished` here.
            CoordinatorEffect::Job(JobCommand::Finish {
                final_checkpoint: _,
            }) => self.violation("job finished, no task reported finished".into()),
            CoordinatorEffect::Job(JobCommand::ResetIdCounter { generation, next }) => {
                let reset = match self.store.as_mut() {
                    Some(s) => s.reset_counter(generation, next).await,
                    None => Err(StoreError::CounterExhausted),
                };
                // The crate docs: a counter that could not be reset may hand
                // out an id again, so this coordinator stops (fenced, or
                // halted) and the next one recovers from the store.
                if let Err(e) = reset {
                    say(&format!("id counter reset to {next} failed: {e}"));
                    if matches!(e, StoreError::StaleGeneration { .. }) {
                        self.note_fence(e);
                    } else {
                        self.halted = Some(e);
                    }
                }
            }
            CoordinatorEffect::Job(JobCommand::Restore {
                checkpoint,
                handles,
            }) => self.restore_target = checkpoint.map(|c| (c, handles)),
            CoordinatorEffect::Job(JobCommand::ResolveInDoubt {
                checkpoint,
                discard_if_stored,
                discard_if_not_stored,
            }) => {
                // The driver answers its own store I/O before the next
                // event, so the outcome is known.
                let stored = self
                    .store
                    .as_ref()
                    .is_some_and(|s| s.holdings().stored().any(|(c, _)| c == checkpoint));
                let list = if stored {
                    discard_if_stored
                } else {
                    discard_if_not_stored
                };
                for h in list {
                    self.discard(h, checkpoint).await;
                }
            }
        }
    }

    async fn io(
        &mut self,
        generation: Generation,
        req: &IoRequest,
    ) -> Result<CheckpointId, StoreError> {
        let Some(store) = self.store.as_mut() else {
            return Err(StoreError::Io {
                op: "open",
                path: "the checkpoint store".into(),
                source: std::io::Error::other("the store is not open"),
            });
        };
        match req {
            IoRequest::AllocateId { request: _ } => store.allocate_id(generation).await,
            // This command runs no master hooks.
            IoRequest::MasterHooks {
                checkpoint,
                timestamp: _,
            } => Ok(*checkpoint),
            IoRequest::Finalize {
                checkpoint,
                timestamp,
                handles,
                kind,
                // The store keeps every stored checkpoint on shutdown.
                externalized: _,
            } => store
                .finalize(
                    generation,
                    *checkpoint,
                    kind.is_savepoint(),
                    *timestamp,
                    handles,
                )
                .await
                .map(|()| *checkpoint),
            IoRequest::Store { checkpoint } => {
                store
                    .store(self.generation, *checkpoint)
                    .await
                    .map(|committed| {
                        if let Some(e) = committed.retention {
                            say(&format!(
                                "checkpoint {checkpoint} stored; its eviction failed: {e}"
                            ));
                        }
                        *checkpoint
                    })
            }
        }
    }

    /// Remembers a refusal by the store's fence: the driver stops before
    /// its next event.
    fn note_fence(&mut self, e: StoreError) {
        if matches!(e, StoreError::StaleGeneration { .. }) {
            self.fenced = Some(e);
        }
    }

    async fn discard(&mut self, handle: StateHandle, checkpoint: CheckpointId) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        match store.discard(self.generation, handle).await {
            Ok(Discarded::Deleted | Discarded::AlreadyGone | Discarded::Savepoint { .. }) => {}
            Ok(Discarded::Refused { checkpoint: held }) => self.violation(format!(
                "durability guard: discard of {handle:?} (checkpoint {checkpoint}) refused: stored checkpoint {held} holds it"
            )),
            Err(e) => {
                say(&format!("discard {handle:?}: {e}"));
                self.note_fence(e);
            }
        }
    }
}

fn show(c: Option<CheckpointId>) -> String {
    c.map_or_else(|| "none".to_string(), |c| c.to_string())
}
