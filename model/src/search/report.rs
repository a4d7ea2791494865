//! What a search found: the typed report, and the one rule that turns
//! property statuses and the way a search ended into a verdict
//! ([`Verdict::decide`]), shared by a check, a shard and a merge of shards.

use ckpt_core::invariants::Violation;
use ckpt_core::task::Semantics;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::search::options::Engine;
use crate::world::coverage::Coverage;
use crate::world::{Action, ModelConfig};

/// Whether the search covered the whole bounded state space, and if not,
/// what stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Completion {
    /// Every reachable state was checked.
    Complete,
    /// The run was asked to stop at its first violation (a legacy
    /// semantics, whose question is "is the bug found") and did: the other
    /// properties were not decided, so none of them is reported as holding.
    StoppedAtViolation,
    /// `--time-limit` ran out first.
    TimeLimit,
    /// States beyond `--max-depth` were not expanded.
    MaxDepth,
    /// An interrupt (Ctrl-C, SIGTERM, SIGHUP) stopped the search.
    Interrupted,
    /// `--max-states` was reached: the report is partial.
    StateLimit,
    /// `--memory-limit-mb` was exceeded: the report is partial.
    MemoryLimit,
}

impl Completion {
    /// Why a search that ended so is partial, in words (`None` when it is
    /// complete).
    #[must_use]
    pub fn cut_reason(self) -> Option<&'static str> {
        Some(match self {
            Completion::Complete => return None,
            Completion::StoppedAtViolation => {
                "the search stopped at the first violation (a legacy semantics asks only whether \
                 its bug is found): the other properties were not decided"
            }
            Completion::TimeLimit => "the time limit ran out before the search finished",
            Completion::MaxDepth => "paths longer than --max-depth were not explored",
            Completion::Interrupted => "interrupted before the search finished",
            Completion::StateLimit => {
                "stopped at the state limit (--max-states) before the search finished: partial \
                 report"
            }
            Completion::MemoryLimit => {
                "stopped at the memory limit (--memory-limit-mb) before the search finished: \
                 partial report"
            }
        })
    }
}

/// What a check asks, which decides what its answer may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Question {
    /// Does every `always` and `eventually` property hold (the fixed
    /// semantics)? Answered "holds" only by a complete search.
    EveryPropertyHolds,
    /// Is the known bug found (a legacy semantics)? Answered "violated" or
    /// "inconclusive", never "holds": a search that does not reach the bug
    /// says nothing about the reducers.
    BugIsFound,
}

impl Question {
    /// The question a check of `semantics` asks.
    #[must_use]
    pub fn of(semantics: Semantics) -> Question {
        match semantics {
            Semantics::Fixed => Question::EveryPropertyHolds,
            Semantics::Legacy(_) => Question::BugIsFound,
        }
    }
}

/// The overall answer of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole bounded space was searched and no `always` / `eventually`
    /// property failed.
    Holds,
    /// A property failed (definitive, whatever the bounds).
    Violated,
    /// No violation was found, but the search did not cover the space (a
    /// limit, an interrupt), searched nothing, or was asked to find a bug
    /// and did not: not a proof of anything.
    Inconclusive,
}

impl Verdict {
    /// The one rule. A violation is definitive; "holds" needs a complete
    /// search that searched something and asked whether every property
    /// holds; everything else is inconclusive.
    #[must_use]
    pub fn decide(
        any_violated: bool,
        complete: bool,
        searched_nothing: bool,
        question: Question,
    ) -> Verdict {
        if any_violated {
            Verdict::Violated
        } else if complete && !searched_nothing && question == Question::EveryPropertyHolds {
            Verdict::Holds
        } else {
            Verdict::Inconclusive
        }
    }

    /// The verdict as a word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// A property's expectation, as stateright names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Holds in every reachable state.
    Always,
    /// Holds in some reachable state (a witness).
    Sometimes,
    /// Holds somewhere on every run (judged where runs end).
    Eventually,
}

impl Kind {
    /// The kind of a stateright expectation.
    #[must_use]
    pub fn of(e: &stateright::Expectation) -> Kind {
        match e {
            stateright::Expectation::Always => Kind::Always,
            stateright::Expectation::Sometimes => Kind::Sometimes,
            stateright::Expectation::Eventually => Kind::Eventually,
        }
    }

    /// The kind as a word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Always => "always",
            Kind::Sometimes => "sometimes",
            Kind::Eventually => "eventually",
        }
    }
}

/// What one property came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Status {
    /// An `always` or `eventually` that held over the whole space.
    #[serde(rename = "holds")]
    Holds,
    /// An `always` or `eventually` that failed (a counterexample exists).
    #[serde(rename = "violated")]
    Violated,
    /// An `always` or `eventually` not violated in a search cut short.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// A `sometimes` that some state satisfied.
    #[serde(rename = "witnessed")]
    Witnessed,
    /// A `sometimes` that no state of the whole space satisfied.
    #[serde(rename = "not witnessed")]
    NotWitnessed,
    /// A `sometimes` not satisfied in a search cut short.
    #[serde(rename = "not witnessed so far")]
    NotWitnessedSoFar,
}

impl Status {
    /// The status of a property of kind `kind` that was (`found`) or was not
    /// discovered, in a search that was or was not `complete`.
    #[must_use]
    pub fn of(kind: Kind, found: bool, complete: bool) -> Status {
        match (kind, found, complete) {
            (Kind::Sometimes, true, _) => Status::Witnessed,
            (Kind::Sometimes, false, true) => Status::NotWitnessed,
            (Kind::Sometimes, false, false) => Status::NotWitnessedSoFar,
            (_, true, _) => Status::Violated,
            (_, false, true) => Status::Holds,
            (_, false, false) => Status::Inconclusive,
        }
    }

    /// The status as the report prints it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Holds => "holds",
            Status::Violated => "violated",
            Status::Inconclusive => "inconclusive",
            Status::Witnessed => "witnessed",
            Status::NotWitnessed => "not witnessed",
            Status::NotWitnessedSoFar => "not witnessed so far",
        }
    }
}

/// What one property came to in one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PropertyResult {
    /// The property's name (`search::system::props`).
    pub name: &'static str,
    /// Its expectation: always, sometimes or eventually.
    pub kind: Kind,
    /// What it came to.
    pub status: Status,
}

/// A counterexample: the actions from the initial state, and the violation.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The property that failed.
    pub property: &'static str,
    /// The actions, in order, from the initial state.
    pub actions: Vec<Action>,
    /// The invariant violation at the last state, if a safety property.
    pub violation: Option<Violation>,
}

/// The result of one check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The configuration checked.
    pub config: ModelConfig,
    /// What the check asked (from the configuration's semantics).
    pub question: Question,
    /// States generated (with repeats).
    pub states: usize,
    /// Unique states (fingerprints; representatives under symmetry).
    pub unique: usize,
    /// Longest path explored (in states: the initial state is depth 1).
    pub depth: usize,
    /// Wall time of the search.
    pub seconds: f64,
    /// Wall time of the whole check (search, shortest counterexample).
    pub total_seconds: f64,
    /// Whether the search covered the bounded space.
    pub completion: Completion,
    /// Every property, in the model's order.
    pub properties: Vec<PropertyResult>,
    /// The (shortest, when a safety property failed) counterexample.
    pub counterexample: Option<Counterexample>,
    /// Transition coverage, if collected.
    pub coverage: Option<Coverage>,
    /// The process's peak resident memory in MiB when the check ended
    /// (Linux; `None` elsewhere).
    pub peak_memory_mb: Option<f64>,
    /// Whether partial-order reduction was on (the counts are then of the
    /// reduced graph).
    pub reduction: bool,
    /// The checker that searched (breadth-first: always stateright's).
    pub engine: Engine,
    /// The run had no state of its own to search (a shard that owns none
    /// of the frontier states): complete, but an answer about nothing, so
    /// its verdict is never "holds".
    pub searched_nothing: bool,
    /// The answer, set by [`CheckReport::decide`].
    pub verdict: Verdict,
    /// Why the verdict is what it is when that is not plain (empty for a
    /// complete search that holds or found a violation).
    pub verdict_note: String,
}

impl CheckReport {
    /// Whether every `always` and `eventually` property holds over the
    /// whole bounded space (false when the search was cut short).
    #[must_use]
    pub fn holds(&self) -> bool {
        self.verdict == Verdict::Holds
    }

    /// The overall answer.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Sets the verdict and its note from the properties, the completion
    /// and the question (again after a shard folded its prefix in).
    pub fn decide(&mut self) {
        let violated = self.properties.iter().any(|p| p.status == Status::Violated);
        let complete = self.completion == Completion::Complete;
        self.verdict = Verdict::decide(violated, complete, self.searched_nothing, self.question);
        self.verdict_note = self.note();
    }

    fn note(&self) -> String {
        if let Some(what) = self.completion.cut_reason() {
            return if self.verdict == Verdict::Violated {
                format!("{what}; the violation found is definitive")
            } else {
                format!(
                    "{what}; no violation found within the bound, which is not \"holds\" ({} \
                     unique states checked)",
                    self.unique
                )
            };
        }
        if self.verdict == Verdict::Violated {
            String::new()
        } else if self.searched_nothing {
            "searched nothing: this shard owns none of the frontier states (every state above \
             the split depth was checked, as every shard checks them)"
                .into()
        } else if self.question == Question::BugIsFound {
            bug_not_reached(
                crate::world::semantics_name(self.config.semantics),
                "--semantics all",
            )
        } else {
            String::new()
        }
    }
}

/// What a search that looked for legacy semantics `name`'s bug and ended
/// without it says: no verdict, never "holds". `all` names the way to run
/// every knob's own configuration (`check`'s `--semantics all`).
#[must_use]
pub fn bug_not_reached(name: &str, all: &str) -> String {
    format!(
        "no violation found, but --semantics {name} is known to be buggy: this configuration did \
         not reach its bug, so this is no verdict (try the defaults, or {all})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_complete_search_of_something_that_asked_for_it_holds() {
        use Question::{BugIsFound, EveryPropertyHolds};
        assert_eq!(
            Verdict::decide(false, true, false, EveryPropertyHolds),
            Verdict::Holds
        );
        for (complete, nothing, q) in [
            (false, false, EveryPropertyHolds),
            (true, true, EveryPropertyHolds),
            (true, false, BugIsFound),
        ] {
            assert_eq!(
                Verdict::decide(false, complete, nothing, q),
                Verdict::Inconclusive
            );
            assert_eq!(
                Verdict::decide(true, complete, nothing, q),
                Verdict::Violated
            );
        }
    }

    #[test]
    fn statuses_serialize_as_the_report_prints_them() {
        for s in [
            Status::Holds,
            Status::Violated,
            Status::Inconclusive,
            Status::Witnessed,
            Status::NotWitnessed,
            Status::NotWitnessedSoFar,
        ] {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::Value::String(s.as_str().into()))
            );
        }
        assert_eq!(
            Status::of(Kind::Sometimes, false, false),
            Status::NotWitnessedSoFar
        );
        assert_eq!(Status::of(Kind::Eventually, true, true), Status::Violated);
    }
}
