//! The `ckpt-model` binary's own modules: what only the command line needs.

pub mod output;
