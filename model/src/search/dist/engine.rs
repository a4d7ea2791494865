//! The distributed breadth-first search.
//!
//! **Who owns what.** Every state has a key, a 64-bit fingerprint (of the
//! orbit's smallest fingerprint under symmetry: [`Key`]), and the key
//! decides its owner, the worker timely's exchange routes the key to. The
//! owner keeps the visited set of its keys only. A worker that generates a
//! successor keeps the state and ships only `(key, tag)` to the owner (16
//! bytes); the owner answers the tag (8 bytes) if the key is new to it,
//! and the generator then keeps the state for the next level. So a state
//! is counted and expanded exactly once over all workers (the sum of the
//! owners' visited sets is the single run's unique count), no state is
//! ever encoded or shipped, and which worker expands it is whoever reached
//! it first (TLC's split of workers and fingerprint servers, folded into
//! each worker).
//!
//! **Rounds.** Round `r` (the timely timestamp) judges the states of depth
//! `r` every worker holds (`always` and `sometimes` properties, stateright's
//! meanings), expands them, and ships the successors' keys; a second input
//! broadcasts each worker's counters and first violation at the same
//! timestamp. When timely's progress tracking says round `r` is complete,
//! every worker knows the same totals and stops at the same round: at the
//! first round with a violation (breadth first, so its path is a shortest
//! one; the lowest worker's is reported), or when no worker generated
//! anything.
//!
//! **Paths.** A state keeps a link to its parent's path and the index of
//! the action that reached it among its parent's actions; a counterexample
//! is that path, and a checkpoint stores the frontier as paths, rebuilt on
//! resume by replaying them ([`replay`]).

use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange as ExchangePact;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Exchange, Input, Inspect, Operator, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

use crate::search::dist::checkpoint::{self, Manifest};

/// A state's key: its fingerprint, or the smallest fingerprint over its
/// symmetry orbit (so an orbit has one owner and is counted once).
pub type Key<M> = Arc<dyn Fn(&<M as Model>::State) -> u64 + Send + Sync>;

/// Where the workers run.
#[derive(Clone, Debug)]
pub enum Cluster {
    /// This many worker threads in this process.
    Threads(usize),
    /// This process is `process` of the processes at `addresses` (one
    /// `host:port` each, in process order), each with `threads` workers,
    /// connected by timely over TCP.
    Processes {
        /// Workers in each process.
        threads: usize,
        /// This process's index into `addresses`.
        process: usize,
        /// Every process's address.
        addresses: Vec<String>,
    },
}

/// How to run the distributed search.
#[derive(Clone, Debug)]
pub struct DistOptions {
    /// Where the workers run.
    pub cluster: Cluster,
    /// Commit a checkpoint here at every round's end.
    pub checkpoint_dir: Option<PathBuf>,
    /// Continue from the newest round every worker committed in
    /// `checkpoint_dir` instead of starting over.
    pub resume: bool,
    /// The configuration as text, stored in each checkpoint: a resume with
    /// another configuration (or another worker count) is refused.
    pub config: String,
    /// Return after committing this round, as if killed (for tests of
    /// resume that need no timing).
    pub stop_after_round: Option<u64>,
}

/// One worker's share of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerShare {
    /// The worker's global index.
    pub worker: u64,
    /// States (keys) it owns: its visited set.
    pub owned: u64,
    /// States it judged and expanded (took from its frontier).
    pub judged: u64,
    /// Successors it generated (initial states included).
    pub generated: u64,
}

/// A distributed run's result, the same in every worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistReport {
    /// Distinct states over all owners.
    pub unique: u64,
    /// States generated over all workers (stateright's `state_count`).
    pub generated: u64,
    /// The deepest level reached (initial states are depth 1).
    pub max_depth: u64,
    /// Each worker's share, by worker index.
    pub shares: Vec<WorkerShare>,
    /// The first `always` property violated and a shortest path to it (an
    /// initial state's index, then action indices: [`replay`]).
    pub violation: Option<(String, Vec<u32>)>,
    /// The `sometimes` properties with an example, by name.
    pub discovered: Vec<String>,
    /// The `sometimes` properties without one.
    pub undiscovered: Vec<String>,
    /// Bytes of keys and answers routed between workers (payload only,
    /// keys a worker owns itself included; timely's headers not).
    pub bytes_routed: u64,
    /// The run returned at `stop_after_round` without finishing.
    pub stopped: bool,
    /// The round the run started at (0, or the resumed one).
    pub started_at_round: u64,
    /// Time the search took in this process.
    pub elapsed: Duration,
}

/// Hashes a `u64` that is already a hash to itself (the visited sets).
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type Visited = HashSet<u64, BuildHasherDefault<Identity>>;

/// A state's path: its parent's, then the index of the action taken.
struct PathNode {
    parent: Option<Rc<PathNode>>,
    step: u32,
}

impl PathNode {
    fn to_vec(&self) -> Vec<u32> {
        let mut out = vec![self.step];
        let mut at = self.parent.as_ref();
        while let Some(p) = at {
            out.push(p.step);
            at = p.parent.as_ref();
        }
        out.reverse();
        out
    }
    fn from_slice(path: &[u32]) -> Option<Rc<PathNode>> {
        path.iter().fold(None, |parent, &step| Some(Rc::new(PathNode { parent, step })))
    }
}

/// The states along `path` (an initial state's index, then the index of
/// each action among the state's actions); `None` if the path does not fit
/// the model.
pub fn replay<M: Model>(model: &M, path: &[u32]) -> Option<Vec<M::State>> {
    let (first, rest) = path.split_first()?;
    let mut states = vec![model.init_states().into_iter().nth(*first as usize)?];
    let mut actions = Vec::new();
    for &step in rest {
        let last = states.last()?;
        actions.clear();
        model.actions(last, &mut actions);
        let a = actions.into_iter().nth(step as usize)?;
        let next = model.next_state(last, a)?;
        actions = Vec::new();
        states.push(next);
    }
    Some(states)
}

/// What each worker broadcasts at a round's end.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Stat {
    share: WorkerShare,
    /// Successors generated this round.
    generated_now: u64,
    discovered: u64,
    violation: Option<(u32, Vec<u32>)>,
}

/// Searches `model` exhaustively, each state owned by the worker its `key`
/// routes to; returns this process's workers' reports (each the global
/// result) or the first error (a bad cluster, a refused checkpoint, a model
/// with an `eventually` property, which a level-by-level search does not
/// judge).
///
/// # Errors
/// As above, as text.
pub fn search<M>(model: Arc<M>, key: Key<M>, opts: &DistOptions) -> Result<DistReport, String>
where
    M: Model + Send + Sync + 'static,
{
    if model.properties().iter().any(|p| p.expectation == Expectation::Eventually) {
        return Err("the distributed search judges `always` and `sometimes` properties only".into());
    }
    let config = match &opts.cluster {
        Cluster::Threads(n) => timely::Config::process((*n).max(1)),
        Cluster::Processes { threads, process, addresses } => timely::Config {
            communication: timely::CommunicationConfig::Cluster {
                threads: (*threads).max(1),
                process: *process,
                addresses: addresses.clone(),
                report: false,
                zerocopy: false,
            },
            worker: timely::WorkerConfig::default(),
        },
    };
    let opts = opts.clone();
    let guards = timely::execute(config, move |worker| run_worker(worker, &model, &key, &opts))?;
    let mut first = None;
    for r in guards.join() {
        let r = r?;
        first.get_or_insert(r);
    }
    first.unwrap_or_else(|| Err("no worker ran".into()))
}

#[allow(clippy::too_many_lines)]
fn run_worker<M: Model>(
    worker: &mut timely::worker::Worker,
    model: &Arc<M>,
    key: &Key<M>,
    opts: &DistOptions,
) -> Result<DistReport, String> {
    let index = worker.index() as u64;
    let peers = worker.peers() as u64;
    let started = Instant::now();
    let props = model.properties();
    let visited: Rc<RefCell<Visited>> = Rc::default();
    let new_owned: Rc<RefCell<Vec<u64>>> = Rc::default();
    let won: Rc<RefCell<Vec<u64>>> = Rc::default();
    let stats: Rc<RefCell<Vec<Stat>>> = Rc::default();
    let mut keys_in: InputHandle<u64, CapacityContainerBuilder<Vec<(u64, u64)>>> = InputHandle::new();
    let mut stats_in: InputHandle<u64, CapacityContainerBuilder<Vec<Stat>>> = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        let (v, n, w, s) = (visited.clone(), new_owned.clone(), won.clone(), stats.clone());
        scope
            .input_from(&mut keys_in)
            .unary(ExchangePact::new(|r: &(u64, u64)| r.0), "Own", move |_, _| {
                move |input, output| {
                    input.for_each(|cap, data| {
                        let mut session = output.session(&cap);
                        let (mut v, mut n) = (v.borrow_mut(), n.borrow_mut());
                        for (k, tag) in data.drain(..) {
                            if v.insert(k) {
                                n.push(k);
                                session.give(tag);
                            }
                        }
                    });
                }
            })
            .container::<Vec<u64>>()
            .exchange(|tag: &u64| tag >> 40)
            .inspect(move |tag| w.borrow_mut().push(*tag))
            .probe_with(&probe);
        scope
            .input_from(&mut stats_in)
            .broadcast()
            .inspect(move |st: &Stat| s.borrow_mut().push(st.clone()))
            .probe_with(&probe);
    });

    let mut round = 0u64;
    let mut generated = 0u64;
    let mut judged = 0u64;
    let mut discovered = 0u64;
    let mut bytes_routed = 0u64;
    let mut frontier: Vec<(M::State, Rc<PathNode>)> = Vec::new();
    let mut candidates: Vec<(M::State, Rc<PathNode>)> = Vec::new();
    if opts.resume {
        let dir = opts.checkpoint_dir.as_ref().ok_or("--resume needs a checkpoint directory")?;
        let last = checkpoint::latest_common_round(dir, peers)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{}: no round that every one of {peers} workers committed", dir.display()))?;
        let (m, fps) = checkpoint::load(dir, index, last).map_err(|e| e.to_string())?;
        if m.config != opts.config || m.peers != peers {
            return Err(format!(
                "{}: a checkpoint of another run ({} workers, configuration {:?}; this run: {peers}, {:?})",
                dir.display(),
                m.peers,
                m.config,
                opts.config
            ));
        }
        visited.borrow_mut().extend(fps);
        for path in &m.frontier {
            let state = replay(&**model, path)
                .and_then(|s| s.into_iter().last())
                .ok_or("a checkpointed path does not fit the model")?;
            frontier.push((state, PathNode::from_slice(path).ok_or("an empty checkpointed path")?));
        }
        (generated, judged, discovered, round) = (m.generated, m.judged, m.discovered, m.round + 1);
    } else if index == 0 {
        for (i, s) in model.init_states().into_iter().enumerate() {
            candidates.push((s, Rc::new(PathNode { parent: None, step: i as u32 })));
        }
    }
    let started_at_round = round;
    let mut actions = Vec::new();
    loop {
        // Judge and expand this worker's states of depth `round`.
        let mut violation = None;
        for (s, path) in frontier.drain(..) {
            judged += 1;
            for (k, p) in props.iter().enumerate() {
                let holds = (p.condition)(model, &s);
                match p.expectation {
                    Expectation::Always if !holds && violation.is_none() => {
                        violation = Some((k as u32, path.to_vec()));
                    }
                    Expectation::Sometimes if holds => discovered |= 1 << k,
                    _ => {}
                }
            }
            actions.clear();
            model.actions(&s, &mut actions);
            for (i, a) in actions.drain(..).enumerate() {
                if let Some(next) = model.next_state(&s, a) {
                    let node = Rc::new(PathNode { parent: Some(path.clone()), step: i as u32 });
                    candidates.push((next, node));
                }
            }
        }
        for (seq, (s, _)) in candidates.iter().enumerate() {
            keys_in.send((key(s), (index << 40) | seq as u64));
        }
        generated += candidates.len() as u64;
        bytes_routed += 16 * candidates.len() as u64;
        let share = WorkerShare { worker: index, owned: visited.borrow().len() as u64, judged, generated };
        stats_in.send(Stat { share, generated_now: candidates.len() as u64, discovered, violation });
        keys_in.advance_to(round + 1);
        stats_in.advance_to(round + 1);
        worker.step_while(|| probe.less_than(keys_in.time()));

        let round_stats: Vec<Stat> = std::mem::take(&mut *stats.borrow_mut());
        let mut keep = vec![false; candidates.len()];
        for tag in won.borrow_mut().drain(..) {
            keep[(tag & ((1 << 40) - 1)) as usize] = true;
        }
        bytes_routed += 8 * keep.iter().filter(|k| **k).count() as u64;
        frontier.extend(candidates.drain(..).zip(keep).filter_map(|(c, k)| k.then_some(c)));
        for st in &round_stats {
            discovered |= st.discovered;
        }
        let violated = round_stats.iter().filter_map(|s| s.violation.clone()).next();
        let done = violated.is_some() || round_stats.iter().all(|s| s.generated_now == 0);
        if done || opts.stop_after_round == Some(round) {
            if !done {
                commit(opts, &visited, &new_owned, &frontier, [index, peers, round, generated, judged, discovered])?;
            }
            let mut shares: Vec<WorkerShare> = round_stats.iter().map(|s| s.share.clone()).collect();
            shares.sort_by_key(|s| s.worker);
            let name = |k: usize| props[k].name.to_string();
            let sometimes = (0..props.len()).filter(|&k| props[k].expectation == Expectation::Sometimes);
            return Ok(DistReport {
                unique: shares.iter().map(|s| s.owned).sum(),
                generated: shares.iter().map(|s| s.generated).sum(),
                max_depth: round,
                shares,
                violation: violated.map(|(k, p)| (name(k as usize), p)),
                discovered: sometimes.clone().filter(|k| discovered >> k & 1 == 1).map(name).collect(),
                undiscovered: sometimes.filter(|k| discovered >> k & 1 == 0).map(name).collect(),
                bytes_routed,
                stopped: !done,
                started_at_round,
                elapsed: started.elapsed(),
            });
        }
        commit(opts, &visited, &new_owned, &frontier, [index, peers, round, generated, judged, discovered])?;
        round += 1;
    }
}

/// Commits this worker's checkpoint of `round` if the run keeps them.
fn commit<S>(
    opts: &DistOptions,
    visited: &Rc<RefCell<Visited>>,
    new_owned: &Rc<RefCell<Vec<u64>>>,
    frontier: &[(S, Rc<PathNode>)],
    [worker, peers, round, generated, judged, discovered]: [u64; 6],
) -> Result<(), String> {
    let Some(dir) = &opts.checkpoint_dir else {
        new_owned.borrow_mut().clear();
        return Ok(());
    };
    let m = Manifest {
        config: opts.config.clone(),
        peers,
        worker,
        round,
        visited_len: visited.borrow().len() as u64,
        generated,
        judged,
        discovered,
        frontier: frontier.iter().map(|(_, p)| p.to_vec()).collect(),
    };
    let owned = std::mem::take(&mut *new_owned.borrow_mut());
    checkpoint::commit(dir, &m, &owned).map_err(|e| e.to_string())
}
