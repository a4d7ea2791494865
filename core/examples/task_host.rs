//! Drives the reference task host from three threads, the way a runtime
//! embeds it: the netty thread delivers barriers, the task thread drains the
//! mailbox, the writer thread completes channel-state results and async
//! parts. An RPC (here: the main thread) aborts checkpoint 2 through the
//! mailbox. The sink runs under the host's lock: it prints every step in
//! reducer order, checks the shared invariants, and hands writer work to the
//! writer thread over a channel (it never calls back into the host).
//!
//! `cargo run -p ckpt-core --example task_host`

#![allow(clippy::disallowed_methods)] // reason: an example plays the runtime, whose threads these are

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use ckpt_core::host::{TaskHost, TaskStep};
use ckpt_core::invariants::task::{check_all, check_quiescent, TaskMonitor};
use ckpt_core::task::{TaskConfig, TaskEffect, TaskEvent, TaskState};
use ckpt_core::{CheckpointId, Millis, StateHandle, Thread};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (work_tx, work_rx) = mpsc::channel::<TaskEffect>();
    let mut monitor = TaskMonitor::new();
    let mut work_tx = Some(work_tx);
    let sink = move |s: &TaskStep<'_>| {
        let who = if s.from_mailbox { "mailbox" } else { "deliver" };
        println!("[{who:7}] {:?} -> {:?}", s.event, s.step.outcome);
        for e in &s.step.effects {
            println!("            {e:?}");
        }
        if let Err(v) = check_all(&mut monitor, s.before, s.event, s.step, s.after) {
            println!("            !! {v}");
        }
        for e in &s.step.effects {
            let for_writer = matches!(
                e,
                TaskEffect::StartWriter { .. } | TaskEffect::StartAsyncPart { .. }
            );
            if let (true, Some(tx)) = (for_writer, &work_tx) {
                let _ = tx.send(e.clone());
            }
        }
        // `Close` is the last step: let the writer thread's loop end.
        if matches!(s.event, TaskEvent::Close) {
            work_tx = None;
        }
    };
    let host = Arc::new(TaskHost::new(TaskState::new(TaskConfig::default())?, sink));
    let input_done = Arc::new(AtomicBool::new(false));

    let netty = {
        let host = Arc::clone(&host);
        thread::spawn(move || {
            for n in 1..=3 {
                let barrier = TaskEvent::BarrierReceived {
                    checkpoint: CheckpointId(n),
                    via: Thread::Netty,
                };
                host.deliver(Millis(n * 10), barrier);
            }
        })
    };
    let task = {
        let host = Arc::clone(&host);
        let input_done = Arc::clone(&input_done);
        thread::spawn(move || loop {
            if !host.run_mailbox_once(Millis(40)) {
                if input_done.load(Ordering::SeqCst) && host.mailbox_len() == 0 {
                    break;
                }
                thread::yield_now();
            }
        })
    };
    let writer = {
        let host = Arc::clone(&host);
        thread::spawn(move || {
            for work in work_rx {
                if let TaskEffect::StartWriter { checkpoint } = work {
                    host.deliver(Millis(50), TaskEvent::WriterCompleted { checkpoint });
                } else if let TaskEffect::StartAsyncPart { checkpoint } = work {
                    let handle = StateHandle(100 + checkpoint.0);
                    let done = TaskEvent::AsyncPartCompleted { checkpoint, handle };
                    host.deliver(Millis(60), done);
                }
            }
        })
    };

    // The coordinator's notify-aborted RPC: into the mailbox, never applied here.
    host.enqueue(TaskEvent::NotifyAborted {
        checkpoint: CheckpointId(2),
    });
    netty.join().map_err(|_| "netty thread panicked")?;
    input_done.store(true, Ordering::SeqCst);
    task.join().map_err(|_| "task thread panicked")?;
    // Let the writer finish what it was handed, then close the task.
    while !host.state().async_parts().is_empty() || !host.state().writer_in_progress().is_empty() {
        thread::yield_now();
    }
    host.deliver(Millis(70), TaskEvent::Close);
    writer.join().map_err(|_| "writer thread panicked")?;

    let state = host.state();
    check_quiescent(&state)?;
    println!(
        "done: lifecycle {:?}, last executed {:?}, results left {:?}",
        state.lifecycle(),
        state.last_executed(),
        state.write_results()
    );
    Ok(())
}
