//! Watching a running checker: the progress line, the limits (time, unique
//! states, memory), the interrupt, and taking its counts and discoveries
//! when it ends or is stopped. Shared by the search ([`crate::search::run`])
//! and the shortest-path search ([`crate::search::shortest`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stateright::{Checker, Path};

use crate::search::memory::rss_mb;
use crate::search::options::CheckOptions;
use crate::search::progress::Progress;
use crate::search::report::Completion;
use crate::search::system::{prefix_of, SysModel, SysState};
use crate::world::Action;

/// What a watched checker came to.
pub(crate) struct Finished {
    pub(crate) states: usize,
    pub(crate) unique: usize,
    pub(crate) depth: usize,
    pub(crate) discoveries: HashMap<&'static str, Path<SysState, Action>>,
    pub(crate) interrupted: bool,
    /// A resource limit (or the time limit) that stopped the search.
    pub(crate) limit: Option<Completion>,
}

impl Finished {
    /// The counts of a search that had nothing to search.
    pub(crate) fn nothing() -> Finished {
        Finished {
            states: 0,
            unique: 0,
            depth: 0,
            discoveries: HashMap::new(),
            interrupted: false,
            limit: None,
        }
    }
}

/// Which limit of `opts` the running search has reached. The time limit is
/// also given to stateright, which does not always honour it (a DFS with
/// symmetry was seen running 13 times past it), so it is enforced here too.
fn limit_reached(opts: &CheckOptions, unique: usize, start: Instant) -> Option<Completion> {
    if opts.time_limit.is_some_and(|t| start.elapsed() >= t) {
        return Some(Completion::TimeLimit);
    }
    if opts.max_states.is_some_and(|n| unique >= n) {
        return Some(Completion::StateLimit);
    }
    let limit = opts.memory_limit_mb?;
    #[allow(clippy::cast_precision_loss)]
    let over = rss_mb().is_some_and(|mb| mb > limit as f64);
    over.then_some(Completion::MemoryLimit)
}

/// Whether the interrupt flag of `opts` is set.
pub(crate) fn interrupted(opts: &CheckOptions) -> bool {
    opts.interrupt
        .as_ref()
        .is_some_and(|f| f.load(Ordering::SeqCst))
}

/// The flag a model watches to turn every successor away (a limit), when
/// `opts` has a limit.
pub(crate) fn stop_flag(opts: &CheckOptions) -> Option<Arc<AtomicBool>> {
    (opts.max_states.is_some() || opts.memory_limit_mb.is_some() || opts.time_limit.is_some())
        .then(|| Arc::new(AtomicBool::new(false)))
}

/// Waits for a spawned checker (with the progress line when asked) and
/// takes its counts. On an interrupt it returns the counts so far without
/// joining. BFS and DFS checkers are different types, hence the generic.
pub(crate) fn finish<C: Checker<SysModel>>(
    checker: C,
    start: Instant,
    opts: &CheckOptions,
    stop: Option<Arc<AtomicBool>>,
) -> Finished {
    let mut progress = opts.progress.then(|| Progress::new(opts.progress_every));
    let mut last = (Instant::now(), 0usize);
    let snapshot = |c: &C, interrupted, limit| Finished {
        states: c.state_count(),
        unique: c.unique_state_count(),
        depth: c.max_depth(),
        discoveries: c.discoveries(),
        interrupted,
        limit,
    };
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(50));
        if interrupted(opts) {
            if let Some(p) = progress.as_mut() {
                p.finish();
            }
            flush_coverage_here();
            return snapshot(&checker, true, None);
        }
        if let Some(limit) = limit_reached(opts, checker.unique_state_count(), start) {
            if let Some(p) = progress.as_mut() {
                p.finish();
            }
            flush_coverage_here();
            // The discoveries so far are taken before the model is told to
            // stop: once it is, every successor is out of bounds and every
            // state looks terminal (which would fake `eventually` failures).
            let f = snapshot(&checker, false, Some(limit));
            if let Some(stop) = &stop {
                stop.store(true, Ordering::SeqCst);
                // The workers now drain their queues without expanding
                // anything: join them rather than leave them running.
                let _ = checker.join();
            }
            return f;
        }
        if let Some(p) = progress.as_mut() {
            if p.due() {
                let unique = checker.unique_state_count();
                #[allow(clippy::cast_precision_loss)]
                let rate = (unique.saturating_sub(last.1)) as f64
                    / last.0.elapsed().as_secs_f64().max(1e-9);
                last = (Instant::now(), unique);
                p.show(&format!(
                    "  {:>6.1}s  states {:>11}  unique {:>10}  {:>9.0} unique/s  depth {:>3}",
                    start.elapsed().as_secs_f64(),
                    checker.state_count(),
                    unique,
                    rate,
                    checker.max_depth()
                ));
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p.finish();
    }
    let c = checker.join();
    flush_coverage_here();
    snapshot(&c, false, None)
}

/// The model's initial state is built on this thread (stateright calls
/// `init_states` where the checker is spawned): flush its coverage, or the
/// setup's `StartScheduler` would be reported as never delivered.
fn flush_coverage_here() {
    crate::world::coverage::flush_coverage();
}

/// stateright's depth bound for "paths of at most `n` actions": depth
/// counts states (the initial one is depth 1), and states at the bound are
/// not checked.
pub(crate) fn depth_bound(actions: usize) -> usize {
    actions.saturating_add(2)
}

/// A path's actions from the initial state: a search from `opts.roots`
/// starts at a frontier state, whose own prefix goes first.
pub(crate) fn from_initial(opts: &CheckOptions, path: Path<SysState, Action>) -> Vec<Action> {
    let prefix: Vec<Action> = opts
        .roots
        .as_ref()
        .and_then(|roots| {
            let first = path.clone().into_states().into_iter().next()?;
            prefix_of(roots, &first).map(<[Action]>::to_vec)
        })
        .unwrap_or_default();
    let mut actions = prefix;
    actions.extend(path.into_actions());
    actions
}
