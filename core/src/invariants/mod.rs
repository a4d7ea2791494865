//! Invariants shared by every proof layer.
pub mod coordinator;
pub mod task;
