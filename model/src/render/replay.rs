//! One replay of a counterexample, shared by every way of showing it: the
//! numbered text, the JSON steps, the Mermaid and SVG diagrams, the core
//! trace and the Explorer address all read the same [`Replay`] instead of
//! stepping the actions again each.
//!
//! A *step* is one event delivered to one machine, numbered from 1 (the
//! setup's `StartScheduler` is step 1): the numbers `ckpt-model replay`
//! prints for the trace. Each checker *action* causes zero or more steps.

use std::collections::BTreeMap;

use ckpt_core::coordinator::CoordinatorState;
use ckpt_core::task::TaskState;
use ckpt_core::trace::{Expected, Trace, TraceLine};
use ckpt_core::TaskId;

use crate::world::{Action, Delivery, ModelConfig, Sim};

/// A counterexample (any path from the initial state) replayed once.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The configuration replayed.
    pub config: ModelConfig,
    /// The setup's steps (the coordinator's scheduler starts).
    pub setup: Vec<Step>,
    /// Each action that was enabled where the path reached it, in order.
    pub actions: Vec<ActionRecord>,
    /// The actions that were given, including any that was not enabled
    /// (the replay stops there).
    pub given: usize,
}

/// One checker action of a replay.
#[derive(Clone, Debug)]
pub struct ActionRecord {
    /// The action taken.
    pub action: Action,
    /// What it does, as the world describes it.
    pub text: String,
    /// Its position among the actions its state enables (the Explorer's
    /// address is the path of these).
    pub index: usize,
    /// The steps it caused.
    pub steps: Vec<Step>,
}

/// One step: an event delivered to one machine.
#[derive(Clone, Debug)]
pub struct Step {
    /// The 1-based step number.
    pub number: usize,
    /// The 1-based number of the action that caused it (0: the setup).
    pub action: usize,
    /// What the world logged: the trace line, the outcome and effects
    /// (rendered), the violation found there.
    pub delivery: Delivery,
    /// The core's serde form of the outcome and the effects, from replaying
    /// the trace's lines through the core reducers (`null` where the trace
    /// has no such machine).
    pub outcome: serde_json::Value,
    /// See [`Step::outcome`].
    pub effects: serde_json::Value,
}

impl Replay {
    /// Replays `actions` from the initial state of `cfg`.
    #[must_use]
    pub fn new(cfg: &ModelConfig, actions: &[Action]) -> Replay {
        let sim = Sim::new(cfg.clone());
        let (mut s, init) = sim.init_with_log();
        let mut records = Vec::new();
        let mut enabled = Vec::new();
        for a in actions {
            enabled.clear();
            sim.enabled(&s, &mut enabled);
            let Some(index) = enabled.iter().position(|x| x == a) else {
                break;
            };
            let mut log = Vec::new();
            let Some(next) = sim.step(&s, *a, Some(&mut log)) else {
                break;
            };
            s = next;
            records.push((*a, sim.describe(a), index, log));
        }
        let mut typed = CoreReplay::new(cfg, &sim);
        let mut number = 0;
        let mut step = |action: usize, d: Delivery| {
            number += 1;
            let (outcome, effects) = typed.step(&d.line);
            Step {
                number,
                action,
                delivery: d,
                outcome,
                effects,
            }
        };
        let setup = init.into_iter().map(|d| step(0, d)).collect();
        let actions_out = records
            .into_iter()
            .enumerate()
            .map(|(i, (action, text, index, log))| ActionRecord {
                action,
                text,
                index,
                steps: log.into_iter().map(|d| step(i + 1, d)).collect(),
            })
            .collect();
        Replay {
            config: cfg.clone(),
            setup,
            actions: actions_out,
            given: actions.len(),
        }
    }

    /// Every step, setup first.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.setup
            .iter()
            .chain(self.actions.iter().flat_map(|a| a.steps.iter()))
    }

    /// The number of steps, setup included: the last one is where a
    /// violation shows.
    #[must_use]
    pub fn step_count(&self) -> usize {
        self.setup.len() + self.actions.iter().map(|a| a.steps.len()).sum::<usize>()
    }

    /// The Explorer address (after the server's `/`) of the path:
    /// `#/steps/0/<i1>/<i2>/...`, each index the action's position among
    /// those its state enables; `None` if an action was not enabled where
    /// the path reached it.
    #[must_use]
    pub fn explorer_fragment(&self) -> Option<String> {
        if self.actions.len() != self.given {
            return None;
        }
        let mut out = String::from("#/steps/0");
        for a in &self.actions {
            out.push('/');
            out.push_str(&a.index.to_string());
        }
        Some(out)
    }

    /// The path as a core trace (replayable by `ckpt_core::trace::replay`).
    /// A restarted task attempt gets its own task machine (id `task +
    /// attempt * tasks`, see [`Sim::trace_task`]), since a trace knows no
    /// restarts.
    #[must_use]
    pub fn trace(&self) -> Trace {
        let sim = Sim::new(self.config.clone());
        Trace {
            coordinator: Some(sim.settings().clone()),
            tasks: trace_tasks(&self.config, &sim),
            steps: self.steps().map(|s| s.delivery.line.clone()).collect(),
        }
    }

    /// The trace as JSON lines, its end line recording what the core's
    /// replay of it comes to (what `--trace-out` writes).
    #[must_use]
    pub fn trace_bytes(&self) -> Vec<u8> {
        let trace = self.trace();
        let expect = ckpt_core::trace::replay(&trace)
            .ok()
            .map(|r| Expected::of(&r));
        let mut out = Vec::new();
        // Writing into memory cannot fail: the trace's parts all serialize.
        if ckpt_core::trace::write_trace_expecting(&mut out, &trace, expect.as_ref()).is_err() {
            out.clear();
        }
        out
    }
}

/// One task machine per (task, attempt): see [`Sim::trace_task`].
fn trace_tasks(cfg: &ModelConfig, sim: &Sim) -> Vec<(TaskId, ckpt_core::task::TaskConfig)> {
    let n = cfg.tasks.max(1) * (1 + u32::from(cfg.task_failures));
    (0..n)
        .map(|t| {
            let task_cfg = if cfg.recovering_tasks == 0 {
                sim.task_config().clone()
            } else {
                cfg.attempt_config(t / cfg.tasks.max(1))
            };
            (TaskId(t), task_cfg)
        })
        .collect()
}

/// The core reducers, fed the trace's lines, for the serde form of each
/// step's outcome and effects.
struct CoreReplay {
    coord: Option<CoordinatorState>,
    tasks: BTreeMap<TaskId, TaskState>,
}

impl CoreReplay {
    fn new(cfg: &ModelConfig, sim: &Sim) -> CoreReplay {
        CoreReplay {
            coord: CoordinatorState::from_settings(sim.settings().clone()).ok(),
            tasks: trace_tasks(cfg, sim)
                .into_iter()
                .filter_map(|(t, c)| TaskState::new(c).ok().map(|s| (t, s)))
                .collect(),
        }
    }

    fn step(&mut self, line: &TraceLine) -> (serde_json::Value, serde_json::Value) {
        let json = |v: Result<serde_json::Value, serde_json::Error>| v.unwrap_or_default();
        match line {
            TraceLine::Coordinator { now, event } => match self.coord.as_ref() {
                Some(c) => {
                    let t = ckpt_core::coordinator::reduce(c, *now, event.clone());
                    let r = (
                        json(serde_json::to_value(&t.step.outcome)),
                        json(serde_json::to_value(&t.step.effects)),
                    );
                    self.coord = Some(t.state);
                    r
                }
                None => (serde_json::Value::Null, serde_json::Value::Null),
            },
            TraceLine::Task { now, task, event } => match self.tasks.get_mut(task) {
                Some(st) => {
                    let t = ckpt_core::task::reduce(st, *now, event.clone());
                    let r = (
                        json(serde_json::to_value(&t.step.outcome)),
                        json(serde_json::to_value(&t.step.effects)),
                    );
                    *st = t.state;
                    r
                }
                None => (serde_json::Value::Null, serde_json::Value::Null),
            },
            TraceLine::Header { .. } | TraceLine::End { .. } => {
                (serde_json::Value::Null, serde_json::Value::Null)
            }
        }
    }
}
