//! The seeded sequence generator.
//!
//! A sequence is a pure function of its seed and the version's profile: the
//! generator runs ckpt's side as it goes to learn which checkpoints are
//! pending, which tasks have acknowledged, which attempts run, and draws
//! the next event from that (acks for tasks and checkpoints that exist, and
//! on purpose late, unknown, duplicate and stale ones too). Flink's side is
//! never consulted, so a seed reruns alone, without a JVM, to the same
//! events.
//!
//! The PRNG is PCG (`rand_pcg::Pcg64`): its output for a seed is fixed by
//! its definition, and every draw below goes through [`Rng`]'s own integer
//! arithmetic rather than a library's sampling code, so sequences stay the
//! same across dependency updates.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

use super::ckpt_side::{CkptSide, SideError};
use super::event::{Event, Reason, SeqConfig, Sequence, Status, TriggerAsk};
use super::profile::FlinkProfile;

/// The draws the generator makes.
pub struct Rng(Pcg64);

impl Rng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(Pcg64::seed_from_u64(seed))
    }

    /// Uniform in `0..n` (`n > 0`; 0 for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Lemire's multiply-shift; the bias is below 2^-64 * n.
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// One of `items`, uniformly.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// An index into `weights`, each with its weight's share.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len().saturating_sub(1)
    }
}

/// A random configuration. Half of them run the periodic scheduler (and
/// then have `min_pause == interval`, see [`SeqConfig::min_pause`]).
pub fn config(rng: &mut Rng) -> SeqConfig {
    let tasks = [1, 2, 2, 2, 3, 3, 4][rng.below(7) as usize];
    let trigger = if tasks >= 3 && rng.chance(1, 4) {
        vec![0, 1]
    } else {
        vec![0]
    };
    let periodic = rng.chance(1, 2);
    let (interval, min_pause) = if periodic {
        let i = rng.pick(&[300u64, 1000, 2000]);
        (i, i)
    } else {
        (1000, rng.pick(&[0u64, 0, 100, 1000]))
    };
    SeqConfig {
        tasks,
        trigger,
        interval,
        timeout: rng.pick(&[200u64, 1000, 2500, 10_000]),
        min_pause,
        max_concurrent: rng.pick(&[1u32, 1, 2, 3]),
        tolerable_failures: rng.pick(&[0u32, 0, 1, 2, 5]),
        retained: rng.pick(&[1u32, 1, 2, 3]),
        hooks: u32::from(rng.chance(1, 5)),
        scheduler: periodic,
    }
}

/// Which kinds of event a sequence may draw beyond the default ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Draws {
    /// Task finishes (`Event::TaskFinished`, FLIP-147). Off by default: a
    /// weight of zero leaves every default sequence as it was.
    pub finishes: bool,
}

struct Draw<'a> {
    draws: Draws,
    rng: &'a mut Rng,
    side: &'a CkptSide,
    config: &'a SeqConfig,
    profile: &'a FlinkProfile,
    next_handle: &'a mut u64,
}

impl Draw<'_> {
    fn handle(&mut self) -> Option<u64> {
        if self.rng.chance(1, 10) {
            return None;
        }
        *self.next_handle += 1;
        Some(*self.next_handle)
    }

    fn event(&mut self) -> Event {
        let pending = self.side.pending();
        let tasks = self.side.tasks();
        let waiting: Vec<(u64, u32)> = pending
            .iter()
            .filter(|(_, _, _, hooks)| !hooks)
            .flat_map(|(id, _, missing, _)| missing.iter().map(move |t| (*id, *t)))
            .collect();
        let hooked: Vec<u64> = pending
            .iter()
            .filter(|(_, _, _, hooks)| *hooks)
            .map(|(id, ..)| *id)
            .collect();
        let running: Vec<u32> = (0u32..)
            .zip(&tasks)
            .filter(|(_, t)| t.running)
            .map(|(i, _)| i)
            .collect();
        let restarted: Vec<u32> = (0u32..)
            .zip(&tasks)
            .filter(|(_, t)| t.attempt > 0)
            .map(|(i, _)| i)
            .collect();
        let periodic_config = self.config.scheduler;
        let weights = [
            10,                                              // 0 trigger
            3,                                               // 1 forced trigger
            3,                                               // 2 savepoint
            if waiting.is_empty() { 0 } else { 40 },         // 3 ack
            4,                                               // 4 odd ack
            if pending.is_empty() { 0 } else { 5 },          // 5 decline
            12,                                              // 6 advance
            if running.is_empty() { 0 } else { 1 },          // 7 task failed
            1,                                               // 8 task running
            if running.len() < tasks.len() { 8 } else { 1 }, // 9 restart
            match (periodic_config, self.side.is_periodic()) {
                // 10 start
                (true, false) => 6,
                (true, true) => 1,
                (false, _) => 0,
            },
            if self.side.is_periodic() { 1 } else { 0 }, // 11 stop
            2,                                           // 12 fail store
            2,                                           // 13 fail finalize
            1,                                           // 14 fail id
            if hooked.is_empty() { 0 } else { 30 },      // 15 hook done
            if self.side.is_shutdown() { 0 } else { 1 }, // 16 shutdown
            1,                                           // 17 stop-with-savepoint
            if running.is_empty() || !self.draws.finishes {
                0
            } else {
                1
            }, // 18 task finished
        ];
        match self.rng.weighted(&weights) {
            0 => Event::Trigger(TriggerAsk::Checkpoint { forced: false }),
            1 => Event::Trigger(TriggerAsk::Checkpoint { forced: true }),
            2 => Event::Trigger(TriggerAsk::Savepoint),
            3 => {
                let (checkpoint, task) = self.rng.pick(&waiting);
                Event::Ack {
                    task,
                    checkpoint,
                    state: self.handle(),
                    stale: false,
                }
            }
            4 => self.odd_ack(&pending, &restarted),
            5 => {
                let (checkpoint, ..) = pending[self.rng.below(pending.len() as u64) as usize];
                let task = self.rng.below(u64::from(self.config.tasks)) as u32;
                Event::Decline {
                    task,
                    checkpoint,
                    reason: self.rng.pick(&Reason::ALL),
                    stale: false,
                }
            }
            6 => Event::Advance { ms: self.advance() },
            7 => Event::TaskFailed {
                task: self.rng.pick(&running),
                legacy: self.profile.fail_unacked && self.rng.chance(1, 2),
            },
            8 => Event::TaskRunning {
                task: self.rng.below(u64::from(self.config.tasks)) as u32,
            },
            9 => Event::Restart,
            10 => Event::StartScheduler,
            11 => Event::StopScheduler,
            12 => Event::FailNextStore,
            13 => Event::FailNextFinalize,
            14 => Event::FailNextId,
            15 => Event::HookDone {
                checkpoint: self.rng.pick(&hooked),
                ok: self.rng.chance(5, 6),
            },
            16 => Event::Shutdown(self.rng.pick(&[
                Status::Canceled,
                Status::Failed,
                Status::Suspended,
            ])),
            17 => Event::Trigger(TriggerAsk::StopWithSavepoint {
                terminate: self.rng.chance(1, 2),
            }),
            _ => Event::TaskFinished {
                task: self.rng.pick(&running),
            },
        }
    }

    /// A late, unknown, duplicate or stale ack.
    fn odd_ack(&mut self, pending: &[(u64, bool, Vec<u32>, bool)], restarted: &[u32]) -> Event {
        let recent = self.side.recent();
        let task = self.rng.below(u64::from(self.config.tasks)) as u32;
        let state = self.handle();
        match self.rng.below(4) {
            0 if !recent.is_empty() => Event::Ack {
                task,
                checkpoint: self.rng.pick(&recent),
                state,
                stale: false,
            },
            1 if !restarted.is_empty() && !pending.is_empty() => Event::Ack {
                task: self.rng.pick(restarted),
                checkpoint: pending[self.rng.below(pending.len() as u64) as usize].0,
                state,
                stale: true,
            },
            2 if !pending.is_empty() => {
                // Any task of a pending checkpoint, acked already or not:
                // a duplicate when it has.
                Event::Ack {
                    task,
                    checkpoint: pending[self.rng.below(pending.len() as u64) as usize].0,
                    state,
                    stale: false,
                }
            }
            _ => Event::Ack {
                task,
                checkpoint: self.side.last_id() + 1 + self.rng.below(3) + 20 * self.rng.below(2),
                state,
                stale: false,
            },
        }
    }

    fn advance(&mut self) -> u64 {
        let c = self.config;
        let next = self
            .side
            .next_deadline()
            .map(|at| at.saturating_sub(self.side.now()).max(1));
        match self.rng.below(6) {
            0 => 1,
            1 => c.timeout,
            2 => c.interval,
            3 => 1 + self.rng.below(c.timeout),
            _ => next.unwrap_or(c.interval),
        }
    }
}

/// Generates sequence number `index` of a run seeded with `seed`: the
/// sequence's own seed is `seed + index`, so any one reruns alone.
pub fn sequence(
    profile: &FlinkProfile,
    seed: u64,
    index: u64,
    events: usize,
) -> Result<Sequence, SideError> {
    sequence_with(profile, seed, index, events, Draws::default())
}

/// [`sequence`], drawing also the kinds of event `draws` turns on.
pub fn sequence_with(
    profile: &FlinkProfile,
    seed: u64,
    index: u64,
    events: usize,
    draws: Draws,
) -> Result<Sequence, SideError> {
    let seed = seed.wrapping_add(index);
    let mut rng = Rng::new(seed);
    let config = config(&mut rng);
    let mut side = CkptSide::new(*profile, &config)?;
    let mut out = Vec::with_capacity(events);
    let mut next_handle = 0;
    let mut after_shutdown = 0;
    while out.len() < events {
        let event = Draw {
            draws,
            rng: &mut rng,
            side: &side,
            config: &config,
            profile,
            next_handle: &mut next_handle,
        }
        .event();
        side.apply(&event)?;
        out.push(event);
        if side.is_shutdown() {
            // A few events after a shutdown (all refused), then the end.
            after_shutdown += 1;
            if after_shutdown > 2 {
                break;
            }
        }
    }
    Ok(Sequence {
        seed,
        config,
        events: out,
    })
}
