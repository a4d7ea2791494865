//! The distributed breadth-first search.
//!
//! **Who owns what.** Every state has a key, a 64-bit fingerprint (under
//! symmetry, one for its whole orbit: [`Key`]), and the key
//! decides its owner, the worker timely's exchange routes the key to. A
//! worker ships each successor it generates to the successor's owner as
//! `(key, path, payload)`; the owner keeps the visited set of its keys
//! only, drops a key it has seen, and takes a new one into its frontier:
//! it judges and expands the states it owns, so a state is counted and
//! expanded exactly once over all workers (the sum of the owners' visited
//! sets is the single run's unique count) and the work is spread as the
//! keys are. The payload is the state in the model's [`Codec`], if it has
//! one (two-phase commit's is `n + 1` bytes, ckpt's world
//! [`crate::world::codec`]); without one it is empty and the owner rebuilds
//! the state by replaying its path from the initial state, which costs a
//! step per level for each new state.
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
//! **Paths.** A state travels with its path (an initial state's index,
//! then the index of each action among its state's actions); a counterexample
//! is that path. An owner keeps its frontier as it arrived (paths and, with
//! a codec, the states' encodings) and decodes a state, or replays its
//! path without a codec ([`replay`]), when it expands it; a checkpoint
//! stores the frontier the same way.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange as ExchangePact;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Operator, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

use crate::search::dist::checkpoint::{self, Manifest};

/// A state's key: its fingerprint, or under symmetry a fingerprint of its
/// orbit ([`crate::search::symmetry::orbit_min`]: the same for every
/// member, so an orbit has one owner and is counted once).
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
    /// Print one line per level on stderr (the first worker of the run,
    /// which is in process 0): the level, the states owned and generated so
    /// far summed over every worker, the time since the start and the
    /// unique states per second, so that a long run shows where it is.
    pub progress: bool,
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
    /// Bytes of the records it routed to owners (itself included): per
    /// record the key (8), the path (4 a step) and the state's encoding;
    /// timely's headers and the length prefixes not.
    pub routed: u64,
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
    /// Bytes of the records routed to owners over all workers (the sum of
    /// [`WorkerShare::routed`]: records a worker owns itself included; with
    /// `w` workers spread evenly, about `(w - 1) / w` of them leave their
    /// worker).
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

/// How a model's states travel between workers: `encode` appends a state's
/// bytes, `decode` reads them back (`None` for bytes it did not write).
/// A decoded state must be equal to the encoded one and have the same key.
pub struct Codec<S> {
    /// The encoding's name and version, stored in checkpoints: a resume
    /// with another encoding is refused.
    pub name: &'static str,
    /// Appends the state's encoding.
    pub encode: fn(&S, &mut Vec<u8>),
    /// The state the bytes encode.
    pub decode: fn(&[u8]) -> Option<S>,
}

impl Codec<crate::world::World> {
    /// ckpt's world in its compact, versioned encoding
    /// ([`crate::world::codec`]).
    #[must_use]
    pub fn world() -> Codec<crate::world::World> {
        Codec {
            name: crate::world::codec::NAME,
            encode: crate::world::codec::encode,
            decode: crate::world::codec::decode,
        }
    }
}

/// A successor on its way to its owner: key, path, payload.
type Ship = (u64, Vec<u32>, Vec<u8>);

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
    /// This worker refused the run's checkpoint (a new run's directory holds
    /// another run's checkpoint; on `--resume`, this worker's own file is
    /// damaged or of another run): every worker ends the run with an error
    /// at the end of this round (the first round of a new run, the first
    /// resumed round), before anything is committed.
    refused: bool,
}

/// Searches `model` exhaustively, each state owned by the worker its `key`
/// routes to, shipping states in `codec` (or as paths, replayed, without
/// one); returns the global result as this process's first worker saw it
/// when every worker of this process succeeded, and otherwise an error: a
/// worker's own reason (a bad cluster, a refused checkpoint, a checkpoint
/// it could not write) before another worker's report that it refused or
/// left.
///
/// An `eventually` property is read where a run ends: a state without
/// actions at which its condition is false violates it. On an acyclic
/// model (ckpt's) that is at least as strict as stateright's reading (no
/// state on the path to the end met it), and the same where it holds.
///
/// # Errors
/// As above, as text.
pub fn search<M>(
    model: Arc<M>,
    key: Key<M>,
    codec: Option<Arc<Codec<M::State>>>,
    opts: &DistOptions,
) -> Result<DistReport, String>
where
    M: Model + Send + Sync + 'static,
{
    let config = match &opts.cluster {
        Cluster::Threads(n) => timely::Config::process((*n).max(1)),
        Cluster::Processes {
            threads,
            process,
            addresses,
        } => timely::Config {
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
    let guards = timely::execute(config, move |worker| {
        run_worker(worker, &model, &key, codec.as_deref(), &opts)
    })?;
    // Worker 0's report when every worker of this process succeeded;
    // otherwise an error, a worker's own reason before the message of one
    // that only saw another leave or refuse.
    let mut first = None;
    let mut errors: Vec<String> = Vec::new();
    for r in guards.join() {
        match r? {
            Ok(report) => {
                first.get_or_insert(report);
            }
            Err(e) => errors.push(e),
        }
    }
    errors.sort_by_key(|e| e.starts_with(OTHER_WORKER));
    match (errors.into_iter().next(), first) {
        (Some(e), _) => Err(e),
        (None, Some(report)) => Ok(report),
        (None, None) => Err("no worker ran".into()),
    }
}

/// How the error of a worker that failed only because another worker
/// refused or left begins (its own process names no reason of its own).
const OTHER_WORKER: &str = "another worker";

/// How many states a worker expands between two steps of its dataflow.
const STEP_EVERY: usize = 1024;

/// Records of one kind, by the round (timely timestamp) they belong to.
type ByRound<T> = BTreeMap<u64, Vec<T>>;
/// A state arriving at its owner: its path of action indices from an
/// initial state, and its encoding (empty without a codec).
type Arrival = (Vec<u32>, Vec<u8>);

#[allow(clippy::too_many_lines)]
fn run_worker<M: Model>(
    worker: &mut timely::worker::Worker,
    model: &Arc<M>,
    key: &Key<M>,
    codec: Option<&Codec<M::State>>,
    opts: &DistOptions,
) -> Result<DistReport, String> {
    let index = worker.index() as u64;
    let peers = worker.peers() as u64;
    let started = Instant::now();
    let props = model.properties();
    let visited: Rc<RefCell<Visited>> = Rc::default();
    // By timestamp: a worker that saw round `r` complete goes on to `r + 1`
    // while another is still taking in `r`'s records, so records of the
    // next round may arrive early; each round takes only its own.
    let new_owned: Rc<RefCell<BTreeMap<u64, Vec<u64>>>> = Rc::default();
    let arrived: Rc<RefCell<ByRound<Arrival>>> = Rc::default();
    let stats: Rc<RefCell<BTreeMap<u64, Vec<Stat>>>> = Rc::default();
    let mut keys_in: InputHandle<u64, CapacityContainerBuilder<Vec<Ship>>> = InputHandle::new();
    let mut stats_in: InputHandle<u64, CapacityContainerBuilder<Vec<Stat>>> = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        let (v, n, a, s) = (
            visited.clone(),
            new_owned.clone(),
            arrived.clone(),
            stats.clone(),
        );
        scope
            .input_from(&mut keys_in)
            .unary(ExchangePact::new(|r: &Ship| r.0), "Own", move |_, _| {
                move |input, output| {
                    input.for_each(|cap, data| {
                        // Nothing leaves: the new states stay with their owner.
                        let _session = output.session(&cap);
                        let t = cap.least().copied().unwrap_or_default();
                        let mut v = v.borrow_mut();
                        let (mut n, mut a) = (n.borrow_mut(), a.borrow_mut());
                        let (n, a) = (n.entry(t).or_default(), a.entry(t).or_default());
                        for (k, path, payload) in data.drain(..) {
                            if v.insert(k) {
                                n.push(k);
                                a.push((path, payload));
                            }
                        }
                    });
                }
            })
            .container::<Vec<u64>>()
            .probe_with(&probe);
        scope
            .input_from(&mut stats_in)
            .broadcast()
            .unary(Pipeline, "Stats", move |_, _| {
                move |input, output| {
                    input.for_each(|cap, data| {
                        let _session = output.session(&cap);
                        let t = cap.least().copied().unwrap_or_default();
                        s.borrow_mut().entry(t).or_default().append(data);
                    });
                }
            })
            .container::<Vec<u64>>()
            .probe_with(&probe);
    });

    let mut round = 0u64;
    let mut generated = 0u64;
    let mut judged = 0u64;
    let mut discovered = 0u64;
    let mut bytes_routed = 0u64;
    // Kept as it arrived (path, encoding) and decoded (or replayed) only
    // when expanded: an encoding is a few hundred bytes, a decoded world
    // several kilobytes.
    let mut frontier: Vec<Arrival> = Vec::new();
    let mut payload = Vec::new();
    // A new run does not start over another run's checkpoint
    // (`refuse_earlier_run` says why). Every worker looks; one that refuses
    // still takes part in the first round (shipping nothing) and says so
    // in its round's statistics, and every worker ends the run with an
    // error when that round ends, before any commit: with a directory per
    // machine some processes may refuse and others not, and a worker that
    // just returned would leave the others to finish a partial search.
    let mut refused: Option<String> = opts
        .checkpoint_dir
        .as_ref()
        .filter(|_| !opts.resume)
        .and_then(|dir| checkpoint::refuse_earlier_run(dir).err())
        .map(|e| e.to_string());
    if opts.resume {
        let dir = opts
            .checkpoint_dir
            .as_ref()
            .ok_or("--resume needs a checkpoint directory")?;
        // Every worker reads the same manifest names (the directory is
        // shared), so all agree on the round or all fail here, but for an
        // error reading the directory (one worker's), which the count of
        // each round's statistics below catches.
        let last = checkpoint::latest_common_round(dir, peers)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!(
                    "{}: no round that every one of {peers} workers committed",
                    dir.display()
                )
            })?;
        // From here each worker reads its own files: one that cannot go on
        // (its file damaged or missing, another run's manifest) takes part
        // in the round the others resume with, with nothing, and refuses
        // there as above, so that no worker goes on without it.
        round = last + 1;
        let encoding = codec.map_or("", |c| c.name);
        let loaded = checkpoint::load(dir, index, last)
            .map_err(|e| e.to_string())
            .and_then(|(m, fps)| {
                if m.config != opts.config || m.peers != peers || m.codec != encoding {
                    Err(format!(
                        "{}: a checkpoint of another run ({} workers, configuration {:?}, state encoding {:?}; this run: {peers}, {:?}, {encoding:?})",
                        dir.display(),
                        m.peers,
                        m.config,
                        m.codec,
                        opts.config
                    ))
                } else {
                    Ok((m, fps))
                }
            });
        match loaded {
            Ok((m, fps)) => {
                visited.borrow_mut().extend(fps);
                frontier = m.frontier;
                (generated, judged, discovered, bytes_routed) =
                    (m.generated, m.judged, m.discovered, m.routed);
            }
            Err(e) => refused = Some(e),
        }
    } else if index == 0 && refused.is_none() {
        for (i, s) in model.init_states().into_iter().enumerate() {
            payload.clear();
            if let Some(c) = codec {
                (c.encode)(&s, &mut payload);
            }
            bytes_routed += 12 + payload.len() as u64;
            keys_in.send((key(&s), vec![i as u32], payload.clone()));
            generated += 1;
        }
    }
    let started_at_round = round;
    // A resumed run's records carry its own round as their timestamp.
    keys_in.advance_to(round);
    stats_in.advance_to(round);
    // Keys owned through the last completed round.
    let mut owned = visited.borrow().len() as u64;
    let mut actions = Vec::new();
    loop {
        // Judge and expand this worker's states of depth `round`.
        let mut violation = None;
        let mut generated_now = 0u64;
        for (n, (path, bytes)) in frontier.drain(..).enumerate() {
            // Let timely move what was sent so far (and the owners drop
            // what they have seen) instead of buffering a whole level's
            // successors until the round's end.
            if n % STEP_EVERY == STEP_EVERY - 1 {
                worker.step();
            }
            let s = match codec {
                Some(c) => (c.decode)(&bytes),
                None => replay(&**model, &path).and_then(|s| s.into_iter().last()),
            }
            .ok_or("a shipped state does not decode or its path does not replay")?;
            judged += 1;
            for (k, p) in props.iter().enumerate() {
                let holds = (p.condition)(model, &s);
                match p.expectation {
                    Expectation::Always if !holds && violation.is_none() => {
                        violation = Some((k as u32, path.clone()));
                    }
                    Expectation::Sometimes if holds => discovered |= 1 << k,
                    _ => {}
                }
            }
            actions.clear();
            model.actions(&s, &mut actions);
            // `eventually`, read at the run's end: a state without actions
            // where the condition does not hold violates it.
            if actions.is_empty() && violation.is_none() {
                let unmet = props.iter().enumerate().find(|(_, p)| {
                    p.expectation == Expectation::Eventually && !(p.condition)(model, &s)
                });
                if let Some((k, _)) = unmet {
                    violation = Some((k as u32, path.clone()));
                }
            }
            for (i, a) in actions.drain(..).enumerate() {
                if let Some(next) = model.next_state(&s, a) {
                    let mut p = Vec::with_capacity(path.len() + 1);
                    p.extend_from_slice(&path);
                    p.push(i as u32);
                    payload.clear();
                    if let Some(c) = codec {
                        (c.encode)(&next, &mut payload);
                    }
                    bytes_routed += 8 + 4 * p.len() as u64 + payload.len() as u64;
                    keys_in.send((key(&next), p, payload.clone()));
                    generated_now += 1;
                }
            }
        }
        if round == 0 {
            generated_now = generated;
        } else {
            generated += generated_now;
        }
        let share = WorkerShare {
            worker: index,
            owned,
            judged,
            generated,
            routed: bytes_routed,
        };
        stats_in.send(Stat {
            share,
            generated_now,
            discovered,
            violation,
            refused: refused.is_some(),
        });
        keys_in.advance_to(round + 1);
        stats_in.advance_to(round + 1);
        worker.step_while(|| probe.less_than(keys_in.time()));

        let round_stats: Vec<Stat> = stats.borrow_mut().remove(&round).unwrap_or_default();
        if round_stats.iter().any(|s| s.refused) {
            return Err(refused.unwrap_or_else(|| {
                format!(
                    "{OTHER_WORKER} refused the run's checkpoint directory (that worker's process \
                     says why: an earlier run's checkpoint in a new run's directory, or a damaged \
                     or foreign file of its own on --resume)"
                )
            }));
        }
        // Every worker sends one record per round. Fewer means a worker
        // left the run (its own error: a checkpoint it could not write, a
        // state it could not decode, other flags than the rest) or is at
        // another round: going on would search without its share.
        if round_stats.len() as u64 != peers {
            return Err(format!(
                "{OTHER_WORKER} left the run at level {round} ({} of {peers} workers reported; \
                 the others' processes say why)",
                round_stats.len()
            ));
        }
        frontier = arrived.borrow_mut().remove(&round).unwrap_or_default();
        owned += new_owned.borrow().get(&round).map_or(0, Vec::len) as u64;
        for st in &round_stats {
            discovered |= st.discovered;
        }
        let violated = round_stats
            .iter()
            .filter_map(|s| s.violation.clone())
            .next();
        let done = violated.is_some() || round_stats.iter().all(|s| s.generated_now == 0);
        if opts.progress && index == 0 {
            let unique: u64 = round_stats.iter().map(|s| s.share.owned).sum();
            let all: u64 = round_stats.iter().map(|s| s.share.generated).sum();
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "level {round}: {unique} unique, {all} generated, {secs:.1} s, {:.0} unique/s",
                unique as f64 / secs.max(1e-9)
            );
        }
        // A round that ends the search commits nothing; one that stops it
        // early (or goes on) commits what it owns.
        if !done {
            commit(
                opts,
                codec,
                owned,
                &new_owned,
                &frontier,
                [
                    index,
                    peers,
                    round,
                    generated,
                    judged,
                    discovered,
                    bytes_routed,
                ],
            )?;
        }
        if done || opts.stop_after_round == Some(round) {
            let mut shares: Vec<WorkerShare> =
                round_stats.iter().map(|s| s.share.clone()).collect();
            shares.sort_by_key(|s| s.worker);
            let routed_total = shares.iter().map(|s| s.routed).sum();
            let name = |k: usize| props[k].name.to_string();
            let sometimes =
                (0..props.len()).filter(|&k| props[k].expectation == Expectation::Sometimes);
            return Ok(DistReport {
                unique: shares.iter().map(|s| s.owned).sum(),
                generated: shares.iter().map(|s| s.generated).sum(),
                max_depth: round,
                shares,
                violation: violated.map(|(k, p)| (name(k as usize), p)),
                discovered: sometimes
                    .clone()
                    .filter(|k| discovered >> k & 1 == 1)
                    .map(name)
                    .collect(),
                undiscovered: sometimes
                    .filter(|k| discovered >> k & 1 == 0)
                    .map(name)
                    .collect(),
                bytes_routed: routed_total,
                stopped: !done,
                started_at_round,
                elapsed: started.elapsed(),
            });
        }
        round += 1;
    }
}

/// Commits this worker's checkpoint of `round` if the run keeps them (the
/// frontier's states in `codec` if there is one, as they arrived).
fn commit<S>(
    opts: &DistOptions,
    codec: Option<&Codec<S>>,
    owned: u64,
    new_owned: &Rc<RefCell<BTreeMap<u64, Vec<u64>>>>,
    frontier: &[Arrival],
    [worker, peers, round, generated, judged, discovered, routed]: [u64; 7],
) -> Result<(), String> {
    // The keys of rounds through `round`; later ones arrived early.
    let later = new_owned.borrow_mut().split_off(&(round + 1));
    let through = std::mem::replace(&mut *new_owned.borrow_mut(), later);
    let Some(dir) = &opts.checkpoint_dir else {
        return Ok(());
    };
    let m = Manifest {
        config: opts.config.clone(),
        peers,
        worker,
        round,
        visited_len: owned,
        generated,
        judged,
        discovered,
        routed,
        codec: codec.map_or("", |c| c.name).to_string(),
        frontier: frontier.to_vec(),
    };
    let keys: Vec<u64> = through.into_values().flatten().collect();
    checkpoint::commit(dir, &m, &keys).map_err(|e| e.to_string())
}
