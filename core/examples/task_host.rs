//! Drives the reference task host from three threads, the way a runtime
//! embeds it: the netty thread delivers barriers, the task thread drains the
//! mailbox, the writer thread completes channel-state results and async
//! parts; the coordinator's RPCs (here: the main thread) go into the
//! mailbox. The sink runs under the host's lock: it prints every step in
//! reducer order and checks the shared invariants.
//!
//! The interleaving is a fixed script, so the output is the same on every
//! run: the main thread hands one step at a time to the thread that owns it
//! and waits until it is done. Each step is printed after a `#` line that
//! says what happens and why. The story is FLINK-17869's: the coordinator
//! aborts checkpoint 2 while its barrier is still on the wire, and the task
//! declines 2 instead of failing. Two outcomes that look like errors are
//! not: `Skipped(Declined(..))` is the task answering "no" to one
//! checkpoint, and `Ignored(NoSuchWriteResult)` is a writer finishing a
//! result the task thread has already removed (the late completion is
//! harmless and is dropped).
//!
//! `cargo run -p ckpt-core --example task_host`

#![allow(clippy::disallowed_methods)] // reason: an example plays the runtime, whose threads these are

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use ckpt_core::host::{TaskEffectSink, TaskHost, TaskStep};
use ckpt_core::invariants::task::{check_all, check_quiescent, TaskMonitor};
use ckpt_core::task::{TaskConfig, TaskEvent, TaskState};
use ckpt_core::{CheckpointId, Millis, StateHandle, Thread};

/// One unit of work for a thread.
type Job<S> = Box<dyn FnOnce(&TaskHost<S>) + Send>;

/// A thread that runs the jobs it is handed, one at a time, and says when
/// each is done.
struct Role<S> {
    jobs: mpsc::Sender<Job<S>>,
    done: mpsc::Receiver<()>,
    thread: thread::JoinHandle<()>,
}

impl<S: TaskEffectSink + Send + 'static> Role<S> {
    fn spawn(host: &Arc<TaskHost<S>>) -> Self {
        let (jobs, rx) = mpsc::channel::<Job<S>>();
        let (done_tx, done) = mpsc::channel();
        let host = Arc::clone(host);
        let thread = thread::spawn(move || {
            for job in rx {
                job(&host);
                if done_tx.send(()).is_err() {
                    break;
                }
            }
        });
        Role { jobs, done, thread }
    }

    /// Runs `job` on this thread and waits for it.
    fn run(
        &self,
        why: &str,
        job: impl FnOnce(&TaskHost<S>) + Send + 'static,
    ) -> Result<(), String> {
        println!("# {why}");
        self.jobs.send(Box::new(job)).map_err(|e| e.to_string())?;
        self.done.recv().map_err(|e| e.to_string())
    }

    fn join(self) -> Result<(), String> {
        drop(self.jobs);
        self.thread
            .join()
            .map_err(|_| "a thread panicked".to_string())
    }
}

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn barrier(n: u64) -> TaskEvent {
    TaskEvent::BarrierReceived {
        checkpoint: cp(n),
        via: Thread::Netty,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut monitor = TaskMonitor::new();
    let violations = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&violations);
    let sink = move |s: &TaskStep<'_>| {
        let who = if s.from_mailbox { "mailbox" } else { "deliver" };
        println!("  [{who}] {:?} -> {:?}", s.event, s.step.outcome);
        for e in &s.step.effects {
            println!("              {e:?}");
        }
        if let Err(v) = check_all(&mut monitor, s.before, s.event, s.step, s.after) {
            println!("              !! {v}");
            seen.fetch_add(1, Ordering::SeqCst);
        }
    };
    let host = Arc::new(TaskHost::new(TaskState::new(TaskConfig::default())?, sink));
    let netty = Role::spawn(&host);
    let task = Role::spawn(&host);
    let writer = Role::spawn(&host);
    let run_mail = |host: &TaskHost<_>| {
        host.run_mailbox_once(Millis(0));
    };

    // Checkpoint 1: the ordinary way.
    netty.run(
        "netty: barrier 1 arrives; the writer starts saving the in-flight data, and a mail is queued for the task thread",
        |h| { h.deliver(Millis(10), barrier(1)); },
    )?;
    writer.run("writer: the channel state of 1 is written", |h| {
        h.deliver(Millis(11), TaskEvent::WriterCompleted { checkpoint: cp(1) });
    })?;
    task.run(
        "task: the mail for 1 runs: the barrier goes downstream, the write result is taken, the async part starts",
        run_mail,
    )?;
    writer.run(
        "writer: the async part of 1 is durable: acknowledge to the coordinator",
        |h| {
            let done = TaskEvent::AsyncPartCompleted {
                checkpoint: cp(1),
                handle: StateHandle(101),
            };
            h.deliver(Millis(12), done);
        },
    )?;
    task.run(
        "rpc + task: the coordinator's notify-complete for 1 goes through the mailbox: operators commit",
        |h| {
            h.enqueue(TaskEvent::NotifyComplete { checkpoint: cp(1) });
            h.run_mailbox_once(Millis(13));
        },
    )?;

    // Checkpoint 2: aborted by the coordinator while its barrier is on the wire.
    task.run(
        "rpc: the coordinator aborted 2 (say, a timeout); the notification waits in the mailbox",
        |h| h.enqueue(TaskEvent::NotifyAborted { checkpoint: cp(2) }),
    )?;
    netty.run(
        "netty: barrier 2 arrives after all; its result is created and its mail queued behind the abort",
        |h| { h.deliver(Millis(20), barrier(2)); },
    )?;
    task.run(
        "task: the abort runs: the result is failed (not removed) and 2 is remembered as aborted",
        run_mail,
    )?;
    task.run(
        "task: the mail for 2 finds it aborted, removes the result and declines: not a task failure (the FLINK-17869 fix)",
        run_mail,
    )?;
    writer.run(
        "writer: it finishes 2 late; the result is gone, so the completion is ignored (harmless, expected)",
        |h| {
            h.deliver(Millis(21), TaskEvent::WriterCompleted { checkpoint: cp(2) });
        },
    )?;

    // Checkpoint 3: the ordinary way again, then close.
    netty.run("netty: barrier 3 arrives", |h| {
        h.deliver(Millis(30), barrier(3));
    })?;
    writer.run("writer: the channel state of 3 is written", |h| {
        h.deliver(Millis(31), TaskEvent::WriterCompleted { checkpoint: cp(3) });
    })?;
    task.run("task: the mail for 3 runs", run_mail)?;
    writer.run("writer: the async part of 3 is durable: acknowledge", |h| {
        let done = TaskEvent::AsyncPartCompleted {
            checkpoint: cp(3),
            handle: StateHandle(103),
        };
        h.deliver(Millis(32), done);
    })?;
    task.run("task: the task closes", |h| {
        h.deliver(Millis(40), TaskEvent::Close);
    })?;
    for role in [netty, task, writer] {
        role.join()?;
    }

    let broken = violations.load(Ordering::SeqCst);
    if broken > 0 {
        return Err(format!("{broken} steps broke an invariant").into());
    }
    let state = host.state();
    check_quiescent(&state)?;
    println!(
        "done: lifecycle {:?}, last executed {:?}, results left {:?}; every invariant held",
        state.lifecycle(),
        state.last_executed(),
        state.write_results()
    );
    Ok(())
}
