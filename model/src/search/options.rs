//! How a search runs: [`CheckOptions`] and the choice of engine.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::search::system::Roots;
use crate::world::Reduction;

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Worker threads (at least 1 is used).
    pub threads: usize,
    /// Breadth-first (shortest paths; stateright's BFS has no symmetry
    /// reduction) instead of depth-first.
    pub bfs: bool,
    /// Symmetry reduction over interchangeable tasks (depth-first only).
    pub symmetry: bool,
    /// Print a progress line on stderr: rewritten in place on a terminal,
    /// one plain line per report otherwise.
    pub progress: bool,
    /// How often the progress line is reported.
    pub progress_every: Duration,
    /// Collect transition coverage (which event met which phase with which
    /// outcome).
    pub coverage: bool,
    /// Stop when the first `always` or `eventually` property fails: the
    /// question of a legacy semantics, "is the bug found".
    pub stop_at_failure: bool,
    /// Stop searching after this long (stateright's `timeout`); the
    /// verdict is then inconclusive unless a violation was found.
    pub time_limit: Option<Duration>,
    /// Explore paths of at most this many actions (stateright's
    /// `target_max_depth`); inconclusive if a longer path existed.
    pub max_depth: Option<usize>,
    /// Set (by an interrupt handler: Ctrl-C, SIGTERM) to stop: the report
    /// then holds the counts and discoveries so far, and the checker threads
    /// are left to the process's exit.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Stop once about this many unique states were found (checked every
    /// 50 ms, so a run may overshoot by what it finds in that time).
    pub max_states: Option<usize>,
    /// Stop once the process's resident memory exceeds this many MiB (read
    /// every 50 ms; Linux only, ignored elsewhere).
    pub memory_limit_mb: Option<u64>,
    /// Search from these states (each with the actions that reach it from
    /// the initial state) instead of the initial state (`--shard`); the
    /// counterexample then starts at the initial state all the same.
    pub roots: Option<Roots>,
    /// Partial-order reduction ([`crate::world::Sim::ample`]).
    pub reduction: Reduction,
    /// Which checker runs a depth-first search.
    pub engine: Engine,
}

/// Which checker runs a depth-first `check` (breadth-first searches are
/// stateright's either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// ckpt's own DFS ([`crate::search::engine`]): stateright's semantics
    /// and counts, less overhead per state.
    #[default]
    Ckpt,
    /// stateright's `DfsChecker` (`--engine stateright`).
    Stateright,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            threads: 1,
            bfs: false,
            symmetry: true,
            progress: false,
            progress_every: Duration::from_secs(1),
            coverage: false,
            stop_at_failure: false,
            time_limit: None,
            max_depth: None,
            interrupt: None,
            max_states: None,
            memory_limit_mb: None,
            roots: None,
            reduction: Reduction::Off,
            engine: Engine::Ckpt,
        }
    }
}
