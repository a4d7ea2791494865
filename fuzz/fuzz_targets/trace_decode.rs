//! cargo-fuzz target `trace_decode`: see `ckpt_tests::fuzzing::trace_decode`;
//! default libFuzzer flags: `ckpt_fuzz` (fuzz/src/lib.rs).
#![no_main]

// libfuzzer-sys's `fuzz_target!`, plus the project's default libFuzzer
// flags (`ckpt_fuzz::fuzz_entry!`).
ckpt_fuzz::fuzz_entry!(ckpt_tests::fuzzing::trace_decode);
