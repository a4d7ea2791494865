//! Coordinator invariants.
