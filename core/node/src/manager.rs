//! The task-manager process: every task of the job as one
//! [`TaskGroup`] (ckpt-core's task driver: netty, rpc, task thread, writer
//! and async parts per attempt, the data channels between the tasks
//! in-process), connected to the coordinator process over TCP
//! ([`crate::wire`]).
//!
//! [`run`] connects (retrying with back-off, [`Backoff`]), says `Hello`
//! with the newest generation it served and the attempts it still runs,
//! and on `Welcome` stops those attempts and says `Ready` with how far the
//! sinks' output is committed (asked of each task's operator, as the
//! in-process host's `Job::start` does). Then it carries the coordinator's
//! `Deploy` (stop every attempt, start every task restored from the named
//! checkpoint, its state files read from [`ManagerConfig::state_fs`]) and
//! RPCs into the group, and the group's acks, declines and failure reports
//! out.
//!
//! A coordinator of an older generation than one already served is
//! refused ([`Refusal::StaleGeneration`], logged, connection closed) and
//! the connection retried; so is every message that names one. A lost
//! connection leaves the attempts running (what they send meanwhile is
//! lost, as on a broken network) and reconnects. A coordinator that has
//! seen the break has failed them over and refuses them as stale attempts
//! ([`Refusal::StaleAttempt`]): the task manager stops them and says
//! `Hello` again without them. One that has not seen it yet takes the new
//! connection as replacing the old one and fails them over then.

use std::sync::Arc;
use std::time::Duration;

use ckpt_core::host::fs::Fs;
use ckpt_core::host::runtime::{GroupSpec, JobOptions, Outbound, TaskGroup};
use ckpt_core::host::store::STATE_DIR;
use ckpt_core::{AttemptNo, CheckpointId, Generation, JobId, TaskId};
use thiserror::Error;
use tokio::net::TcpStream;

use crate::wire::{self, Reader, Refusal, ToCoordinatorMsg, ToManagerMsg, WireError, Writer};

/// Reconnection back-off: capped exponential (doubling after each failed
/// connect and each session refused or broken before its handshake
/// ended; back to the first delay after a handshake), no jitter (one task
/// manager per coordinator: there is no herd to spread). A small loop
/// rather than a crate: `backoff` is unmaintained (RUSTSEC-2025-0012), and
/// `backon` retries one future, while this loop resets its delay in the
/// middle of a long-lived session; what it needs is a doubling and a cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
    /// Give up after this long without a connection that got through the
    /// handshake (`None`: never).
    pub give_up_after: Option<Duration>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(20),
            max: Duration::from_secs(1),
            give_up_after: Some(Duration::from_secs(60)),
        }
    }
}

impl Backoff {
    /// The delay after `delay`: doubled, at most [`Backoff::max`].
    #[must_use]
    pub fn next(&self, delay: Duration) -> Duration {
        delay.saturating_mul(2).min(self.max)
    }
}

/// How the task manager runs.
pub struct ManagerConfig {
    /// The job.
    pub job: JobId,
    /// The coordinator's address.
    pub coordinator: std::net::SocketAddr,
    /// The tasks, their topology, configuration and operators.
    pub spec: GroupSpec,
    /// Host options of the tasks (invariant checks, verbose failures).
    pub options: JobOptions,
    /// The file system of the state files: the coordinator's store must
    /// find them there (`ckpt-node task` gives an [`ObjFs`](crate::ObjFs)
    /// over the store both processes reach). The operators' own output is
    /// theirs ([`spec`](Self::spec)'s operators are built with it).
    pub state_fs: Arc<dyn Fs>,
    /// Reconnection back-off.
    pub backoff: Backoff,
    /// Whether the job's output is complete (polled every
    /// [`COMPLETE_POLL`]); once it is, the coordinator is told.
    pub complete: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for ManagerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerConfig")
            .field("job", &self.job)
            .field("coordinator", &self.coordinator)
            .field("spec", &self.spec)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

/// How often the task manager asks whether the output is complete.
pub const COMPLETE_POLL: Duration = Duration::from_millis(50);

/// Why the task manager stopped without the job ending.
#[derive(Debug, Error)]
pub enum ManagerError {
    /// No connection that got through the handshake within
    /// [`Backoff::give_up_after`].
    #[error("no coordinator at {addr} for {waited:?}: {last}")]
    Unreachable {
        /// The address.
        addr: std::net::SocketAddr,
        /// How long it tried.
        waited: Duration,
        /// The last error.
        last: String,
    },
    /// The coordinator refused for good (another job, another task count).
    #[error("refused: {0}")]
    Refused(Refusal),
    /// The state directory could not be created.
    #[error("state directory: {0}")]
    Dir(String),
    /// The tasks could not be set up.
    #[error("tasks: {0}")]
    Job(#[from] ckpt_core::host::runtime::JobError),
}

/// What a task manager did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerReport {
    /// Deploys carried out, with the checkpoint each restored.
    pub deploys: Vec<Option<CheckpointId>>,
    /// Connections refused (a stale coordinator, stale attempts).
    pub refusals: u64,
    /// The newest generation served.
    pub generation: Option<Generation>,
    /// Violations the tasks found (with `check_invariants`).
    pub violations: Vec<String>,
}

fn say(line: &str) {
    println!("task manager: {line}");
}

enum Session {
    /// The job ended (`Stop`).
    Stopped,
    /// The coordinator refused stale attempts, now stopped: reconnect at
    /// once.
    Reconnect,
}

/// Runs the task manager until the coordinator stops the job.
pub async fn run(cfg: ManagerConfig) -> Result<ManagerReport, ManagerError> {
    // The tasks write their state files under `state/` (the object
    // store's layout; nothing to create on an object store, the directory
    // on a file system).
    cfg.state_fs
        .create_dir_all(STATE_DIR)
        .map_err(|e| ManagerError::Dir(e.to_string()))?;
    let (mut group, mut outbox) = TaskGroup::standalone(
        cfg.job,
        cfg.spec.clone(),
        cfg.options.clone(),
        Arc::clone(&cfg.state_fs),
    )?;
    let mut report = ManagerReport::default();
    let mut delay = cfg.backoff.initial;
    let mut since = tokio::time::Instant::now();
    loop {
        let stream = match TcpStream::connect(cfg.coordinator).await {
            Ok(s) => s,
            Err(e) => {
                let waited = since.elapsed();
                if cfg.backoff.give_up_after.is_some_and(|g| waited >= g) {
                    group.stop().await;
                    return Err(ManagerError::Unreachable {
                        addr: cfg.coordinator,
                        waited,
                        last: e.to_string(),
                    });
                }
                tokio::time::sleep(delay).await;
                delay = cfg.backoff.next(delay);
                continue;
            }
        };
        let mut handshook = false;
        let session = match wire::split(stream) {
            Ok((reader, writer)) => {
                session(
                    &cfg,
                    &mut group,
                    &mut outbox,
                    &mut report,
                    &mut handshook,
                    reader,
                    writer,
                )
                .await
            }
            Err(e) => Err(WireError::Io(e)),
        };
        match session {
            Ok(Session::Stopped) => {
                group.stop().await;
                report.violations = group.stats().violations;
                return Ok(report);
            }
            // Its stale attempts are stopped: say Hello again at once.
            Ok(Session::Reconnect) => continue,
            Err(WireError::Refused(r @ (Refusal::WrongJob { .. } | Refusal::TaskCount { .. }))) => {
                group.stop().await;
                return Err(ManagerError::Refused(r));
            }
            Err(e) => {
                say(&format!("connection ended: {e}"));
                // A session that got through the handshake resets the
                // back-off; one refused or broken before it lets it grow.
                if handshook {
                    delay = cfg.backoff.initial;
                    since = tokio::time::Instant::now();
                } else if cfg
                    .backoff
                    .give_up_after
                    .is_some_and(|g| since.elapsed() >= g)
                {
                    group.stop().await;
                    return Err(ManagerError::Unreachable {
                        addr: cfg.coordinator,
                        waited: since.elapsed(),
                        last: e.to_string(),
                    });
                }
            }
        }
        tokio::time::sleep(delay).await;
        delay = cfg.backoff.next(delay);
    }
}

/// One connection: the handshake, then the job's traffic until it ends.
async fn session(
    cfg: &ManagerConfig,
    group: &mut TaskGroup,
    outbox: &mut ckpt_core::host::runtime::TaskOutbox,
    report: &mut ManagerReport,
    handshook: &mut bool,
    mut reader: Reader,
    mut writer: Writer,
) -> Result<Session, WireError> {
    writer
        .send(&ToCoordinatorMsg::Hello {
            job: cfg.job,
            tasks: cfg.spec.tasks,
            generation: report.generation,
            running: group.running(),
        })
        .await?;
    let generation = match reader.recv::<ToManagerMsg>().await? {
        ToManagerMsg::Welcome { job, generation } => {
            if job != cfg.job {
                return Err(Refusal::WrongJob {
                    expected: cfg.job,
                    got: job,
                }
                .into());
            }
            if let Some(newest) = report.generation.filter(|n| generation < *n) {
                let r = Refusal::StaleGeneration {
                    got: generation,
                    newest,
                };
                report.refusals += 1;
                say(&format!("refusing the coordinator: {r}"));
                return Err(r.into());
            }
            generation
        }
        ToManagerMsg::Refused(r @ Refusal::StaleAttempt { .. }) => {
            report.refusals += 1;
            say(&format!("refused: {r}; stopping those attempts"));
            group.stop().await;
            return Ok(Session::Reconnect);
        }
        ToManagerMsg::Refused(r) => {
            report.refusals += 1;
            say(&format!("refused: {r}"));
            return Err(r.into());
        }
        other => return Err(WireError::Unexpected(format!("{other:?} before Welcome"))),
    };
    if report.generation != Some(generation) {
        say(&format!("serving generation {generation}"));
    }
    report.generation = Some(generation);
    // Whatever still runs was deployed by an older leader (or failed over
    // by this one): stop it before saying how far the output is committed.
    group.stop().await;
    // Anything the stopped attempts queued is for a coordinator that no
    // longer expects it.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, outbox.recv()).await {}
    let committed = committed_epoch(cfg)?;
    writer.send(&ToCoordinatorMsg::Ready { committed }).await?;
    *handshook = true;
    let mut told_complete = false;
    let mut poll = tokio::time::interval(COMPLETE_POLL);
    loop {
        tokio::select! {
            msg = reader.recv::<ToManagerMsg>() => match msg? {
                ToManagerMsg::Deploy { generation: g, attempts, restore } => {
                    fence(generation, g, report)?;
                    group.stop().await;
                    let restore_ref = restore.as_ref().map(|(c, hs)| (*c, hs.as_slice()));
                    let attempt_of = |task: TaskId| {
                        attempts
                            .iter()
                            .find(|(t, _)| *t == task)
                            .map_or(AttemptNo(0), |(_, a)| *a)
                    };
                    match group.start(attempt_of, restore_ref) {
                        Ok(()) => {
                            let restored = restore.as_ref().map(|(c, _)| *c);
                            report.deploys.push(restored);
                            say(&format!(
                                "deployed attempts {} restored from checkpoint {}",
                                attempts.first().map_or(0, |(_, a)| a.0),
                                restored.map_or_else(|| "none".to_string(), |c| c.to_string())
                            ));
                        }
                        Err(e) => {
                            say(&format!("deploy failed: {e}"));
                            group.stop().await;
                            if let Some((task, attempt)) = attempts.first() {
                                writer
                                    .send(&ToCoordinatorMsg::Failed {
                                        generation,
                                        task: *task,
                                        attempt: *attempt,
                                    })
                                    .await?;
                            }
                        }
                    }
                }
                ToManagerMsg::Rpc { generation: g, task, attempt, message } => {
                    fence(generation, g, report)?;
                    group.deliver(task, attempt, message.event());
                }
                ToManagerMsg::Stop { generation: g } => {
                    fence(generation, g, report)?;
                    say("stopped by the coordinator");
                    return Ok(Session::Stopped);
                }
                ToManagerMsg::Welcome { .. } | ToManagerMsg::Refused(_) => {
                    return Err(WireError::Unexpected("a second handshake answer".into()));
                }
            },
            out = outbox.recv() => match out {
                Some(Outbound::Coordinator(event)) => {
                    writer.send(&ToCoordinatorMsg::Rpc { generation, event }).await?;
                }
                Some(Outbound::Failed(task, attempt)) => {
                    writer
                        .send(&ToCoordinatorMsg::Failed { generation, task, attempt })
                        .await?;
                }
                None => return Ok(Session::Stopped),
            },
            _ = poll.tick(), if !told_complete => {
                if (cfg.complete)() {
                    told_complete = true;
                    writer.send(&ToCoordinatorMsg::OutputComplete { generation }).await?;
                }
            }
        }
    }
}

/// Refuses a message of another generation than the one welcomed.
fn fence(served: Generation, got: Generation, report: &mut ManagerReport) -> Result<(), WireError> {
    if got == served {
        return Ok(());
    }
    report.refusals += 1;
    let r = Refusal::StaleGeneration {
        got,
        newest: served.max(got),
    };
    say(&format!("refusing a message: {r}"));
    Err(r.into())
}

/// How far the sinks' output is committed: the newest checkpoint any
/// task's operator reports.
fn committed_epoch(cfg: &ManagerConfig) -> Result<Option<CheckpointId>, WireError> {
    let mut committed = None;
    for t in 0..cfg.spec.tasks {
        let epoch = (cfg.spec.operators)(TaskId(t))
            .committed_epoch()
            .map_err(|e| WireError::Unexpected(format!("task {t}: committed epoch: {e}")))?;
        committed = committed.max(epoch);
    }
    Ok(committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_up_to_its_cap() {
        let b = Backoff::default();
        let mut d = b.initial;
        let mut seen = Vec::new();
        for _ in 0..8 {
            seen.push(d.as_millis());
            d = b.next(d);
        }
        assert_eq!(seen, vec![20, 40, 80, 160, 320, 640, 1000, 1000]);
    }
}
