//! Invariants, written once and used by every proof layer: unit and scenario
//! tests, proptest, the stateright model, the loom tests and the fuzz targets.
//!
//! Each check returns `Result<(), Violation>`; a [`Violation`] names the
//! invariant and says what broke it. Single-state checks are plain functions;
//! rules that span steps live in small monitors that observe every event and
//! its effects.

pub mod checked;
pub mod coordinator;
pub mod durability;
mod finish;
pub mod task;

use std::fmt;

/// A broken invariant: which one, and the evidence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Violation {
    /// The invariant's name (stable; tests match on it).
    pub invariant: &'static str,
    /// What was observed.
    pub detail: String,
}

impl Violation {
    /// A violation of `invariant` with `detail`.
    pub fn new(invariant: &'static str, detail: impl Into<String>) -> Self {
        Violation {
            invariant,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant `{}` violated: {}",
            self.invariant, self.detail
        )
    }
}

impl std::error::Error for Violation {}

/// `Err(Violation)` unless `cond` holds.
pub(crate) fn ensure(
    cond: bool,
    invariant: &'static str,
    detail: impl FnOnce() -> String,
) -> Result<(), Violation> {
    if cond {
        Ok(())
    } else {
        Err(Violation::new(invariant, detail()))
    }
}

#[cfg(test)]
mod tests {
    use super::Violation;

    #[test]
    fn a_violation_displays_its_invariant_and_what_was_observed() {
        let v = Violation::new("one-completing", "checkpoints 3 and 4 both store");
        assert_eq!(
            v.to_string(),
            "invariant `one-completing` violated: checkpoints 3 and 4 both store"
        );
    }
}
