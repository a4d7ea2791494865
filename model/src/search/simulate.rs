//! Seeded random walks over the world, for configurations too big to search
//! exhaustively: `ckpt-model simulate --seed S --walks N --depth D`.
//!
//! Each walk starts at the initial state and takes uniformly random enabled
//! actions until a run ends (nothing enabled), a property fails, or `D`
//! actions were taken. Every state on the way is judged by the same
//! properties as `check` ([`SysModel::properties`]): an `always` that does
//! not hold is a violation; a `sometimes` that holds is a witness; an
//! `eventually` that never held on a walk that ended (not one cut at the
//! depth bound) is a violation, as at `check`'s terminal states.
//!
//! Walk `i` (from 0) uses seed `S + i` (wrapping), so the walk that found a
//! violation is replayed alone by `--seed <its seed> --walks 1`. Its actions
//! are the counterexample, printed and written as `check` does.
//! Finding nothing proves nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use stateright::{Expectation, Model};

use crate::search::report::Counterexample;
use crate::search::system::SysModel;
use crate::world::{Action, ModelConfig, World};

/// How to simulate.
#[derive(Clone, Debug)]
pub struct SimulateOptions {
    /// The first walk's seed (walk `i` uses `seed + i`).
    pub seed: u64,
    /// Number of walks.
    pub walks: u64,
    /// Actions per walk at most.
    pub depth: usize,
    /// Stop after this long (the report then covers the walks done).
    pub time_limit: Option<Duration>,
    /// Keep walking after the first violation (to count them).
    pub keep_going: bool,
    /// Set (by a Ctrl-C handler) to stop after the current walk.
    pub interrupt: Option<Arc<AtomicBool>>,
}

impl Default for SimulateOptions {
    fn default() -> Self {
        SimulateOptions {
            seed: 0,
            walks: 1_000,
            depth: 200,
            time_limit: None,
            keep_going: false,
            interrupt: None,
        }
    }
}

/// A violation found by a walk.
#[derive(Clone, Debug)]
pub struct WalkViolation {
    /// The seed of the walk (`--seed` it with `--walks 1` to replay it).
    pub seed: u64,
    /// The walk's index.
    pub walk: u64,
    /// The property and the actions from the initial state.
    pub counterexample: Counterexample,
}

/// What the walks came to.
#[derive(Clone, Debug)]
pub struct SimulateReport {
    /// The configuration walked.
    pub config: ModelConfig,
    /// Walks taken (fewer than asked when stopped early).
    pub walks: u64,
    /// Actions taken over all walks.
    pub steps: u64,
    /// Walks that reached a run end (nothing enabled).
    pub ended: u64,
    /// Walks cut at the depth bound.
    pub cut: u64,
    /// Longest walk, in actions.
    pub longest: usize,
    /// Seconds the walks took.
    pub seconds: f64,
    /// Violations found (the first only, unless `keep_going`).
    pub violations: Vec<WalkViolation>,
    /// `sometimes` properties witnessed, by name.
    pub witnessed: Vec<&'static str>,
    /// `sometimes` properties never witnessed.
    pub not_witnessed: Vec<&'static str>,
    /// The walks were stopped early (time limit or interrupt).
    pub stopped: bool,
}

impl SimulateReport {
    /// Walks per second.
    #[must_use]
    pub fn walks_per_second(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let w = self.walks as f64;
        w / self.seconds.max(1e-9)
    }
}

/// A walk's generator: PCG (`rand_pcg`'s 64-bit-output multiplicative
/// generator), seeded by `rand_core`'s `seed_from_u64`; both are documented
/// value-stable, so a walk replays by its seed on every platform and
/// version.
#[derive(Clone, Debug)]
pub struct WalkRng(Pcg64Mcg);

impl WalkRng {
    /// The generator of the walk with `seed`.
    #[must_use]
    pub fn new(seed: u64) -> WalkRng {
        WalkRng(Pcg64Mcg::seed_from_u64(seed))
    }

    /// A uniform index below `n` (`n` > 0), by the multiply-shift of one
    /// 64-bit draw (the bias, below n / 2^64, is far below any use here).
    pub fn below(&mut self, n: usize) -> usize {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        let wide = u128::from(self.0.next_u64()) * u128::from(n64);
        usize::try_from(wide >> 64).unwrap_or(0)
    }
}

enum WalkEnd {
    Ended,
    Cut,
    Violated(&'static str),
}

/// One walk from the initial state with `seed`: the actions taken and how
/// it ended. `witnessed[i]` is set for each `sometimes` property `i` seen.
fn walk(
    model: &SysModel,
    props: &[stateright::Property<SysModel>],
    seed: u64,
    depth: usize,
    witnessed: &mut [bool],
) -> (Vec<Action>, WalkEnd) {
    let mut rng = WalkRng::new(seed);
    let mut state: World = model.sim.init();
    let mut actions = Vec::new();
    let mut enabled = Vec::new();
    // `eventually` properties that have not held on this walk yet.
    let mut pending: Vec<bool> = props
        .iter()
        .map(|p| p.expectation == Expectation::Eventually)
        .collect();
    loop {
        for (i, p) in props.iter().enumerate() {
            let holds = (p.condition)(model, &state);
            match p.expectation {
                Expectation::Always => {
                    if !holds {
                        return (actions, WalkEnd::Violated(p.name));
                    }
                }
                Expectation::Sometimes => {
                    if holds {
                        if let Some(w) = witnessed.get_mut(i) {
                            *w = true;
                        }
                    }
                }
                Expectation::Eventually => {
                    if holds {
                        if let Some(b) = pending.get_mut(i) {
                            *b = false;
                        }
                    }
                }
            }
        }
        enabled.clear();
        model.actions(&state, &mut enabled);
        if enabled.is_empty() {
            // A run end: an `eventually` that never held failed.
            if let Some(i) = pending.iter().position(|b| *b) {
                if let Some(p) = props.get(i) {
                    return (actions, WalkEnd::Violated(p.name));
                }
            }
            return (actions, WalkEnd::Ended);
        }
        if actions.len() >= depth {
            return (actions, WalkEnd::Cut);
        }
        let Some(a) = enabled.get(rng.below(enabled.len())).copied() else {
            return (actions, WalkEnd::Cut);
        };
        // One world per walk, stepped in place (no copy per step).
        if !model.sim.step_in_place(&mut state, a, None) {
            // Enabled actions always step; treat the impossible as a cut.
            return (actions, WalkEnd::Cut);
        }
        actions.push(a);
    }
}

/// What one thread's share of the walks came to.
struct Share {
    walks: u64,
    steps: u64,
    ended: u64,
    cut: u64,
    longest: usize,
    violations: Vec<WalkViolation>,
    witnessed: Vec<bool>,
    stopped: bool,
}

/// Walks `first, first + stride, ...` (below `opts.walks`).
fn run_share(
    model: &SysModel,
    opts: &SimulateOptions,
    first: u64,
    stride: u64,
    start: Instant,
) -> Share {
    let props = model.properties();
    let mut sh = Share {
        walks: 0,
        steps: 0,
        ended: 0,
        cut: 0,
        longest: 0,
        violations: Vec::new(),
        witnessed: vec![false; props.len()],
        stopped: false,
    };
    let mut i = first;
    while i < opts.walks {
        let over_time = opts.time_limit.is_some_and(|t| start.elapsed() >= t);
        let interrupted = opts
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst));
        if over_time || interrupted {
            sh.stopped = true;
            break;
        }
        let seed = opts.seed.wrapping_add(i);
        let (actions, end) = walk(model, &props, seed, opts.depth, &mut sh.witnessed);
        sh.walks += 1;
        sh.steps += actions.len() as u64;
        sh.longest = sh.longest.max(actions.len());
        match end {
            WalkEnd::Ended => sh.ended += 1,
            WalkEnd::Cut => sh.cut += 1,
            WalkEnd::Violated(property) => {
                let violation = replay_violation(model, &actions);
                sh.violations.push(WalkViolation {
                    seed,
                    walk: i,
                    counterexample: Counterexample {
                        property,
                        actions,
                        violation,
                    },
                });
                if !opts.keep_going {
                    break;
                }
            }
        }
        i = i.saturating_add(stride);
    }
    sh
}

/// Runs the walks over `cfg` on `threads` threads (walk `i` on thread
/// `i % threads`; each thread stops at its own first violation unless
/// `keep_going`, so the violation with the lowest walk index is found
/// whatever the thread count).
#[must_use]
pub fn simulate(cfg: &ModelConfig, opts: &SimulateOptions, threads: usize) -> SimulateReport {
    let model = SysModel::new(cfg.clone());
    let props = model.properties();
    let threads = threads.max(1);
    let stride = u64::try_from(threads).unwrap_or(1);
    let start = Instant::now();
    let shares: Vec<Share> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..stride)
            .map(|k| {
                let model = &model;
                scope.spawn(move || run_share(model, opts, k, stride, start))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut r = SimulateReport {
        config: cfg.clone(),
        walks: 0,
        steps: 0,
        ended: 0,
        cut: 0,
        longest: 0,
        seconds: start.elapsed().as_secs_f64(),
        violations: Vec::new(),
        witnessed: Vec::new(),
        not_witnessed: Vec::new(),
        stopped: false,
    };
    let mut witnessed = vec![false; props.len()];
    for sh in shares {
        r.walks += sh.walks;
        r.steps += sh.steps;
        r.ended += sh.ended;
        r.cut += sh.cut;
        r.longest = r.longest.max(sh.longest);
        r.stopped |= sh.stopped;
        r.violations.extend(sh.violations);
        for (w, x) in witnessed.iter_mut().zip(sh.witnessed) {
            *w |= x;
        }
    }
    r.violations.sort_by_key(|v| v.walk);
    if !opts.keep_going {
        r.violations.truncate(1);
    }
    for (p, w) in props.iter().zip(&witnessed) {
        if p.expectation == Expectation::Sometimes {
            if *w {
                r.witnessed.push(p.name);
            } else {
                r.not_witnessed.push(p.name);
            }
        }
    }
    r
}

/// The invariant violation at the end of `actions`, if a safety one.
fn replay_violation(
    model: &SysModel,
    actions: &[Action],
) -> Option<ckpt_core::invariants::Violation> {
    let mut s = model.sim.init();
    for a in actions {
        if !model.sim.step_in_place(&mut s, *a, None) {
            return None;
        }
    }
    s.violation.map(|v| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws below 1,000 of the walk with seed 1.
    const PINNED: [usize; 8] = [856, 137, 470, 726, 369, 557, 391, 739];

    #[test]
    fn a_walk_generator_draws_the_same_stream_on_every_build() {
        // Pinned: a change of this stream (another crate version, another
        // seeding) changes which walk finds what, and the pinned walks of
        // the README and the tests with it.
        let mut r = WalkRng::new(1);
        let got: Vec<usize> = (0..8).map(|_| r.below(1_000)).collect();
        assert_eq!(got, PINNED, "{got:?}");
    }

    #[test]
    fn a_walk_generator_is_deterministic_and_in_range() {
        let mut a = WalkRng::new(7);
        let mut b = WalkRng::new(7);
        for n in 1..100 {
            let x = a.below(n);
            assert_eq!(x, b.below(n));
            assert!(x < n);
        }
    }
}
