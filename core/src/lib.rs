//! # ckpt-core
//!
//! (crate docs: written in full once the API settles)

#![forbid(unsafe_code)]

pub mod coordinator;
pub mod invariants;
pub mod task;
pub mod types;

pub use types::*;
