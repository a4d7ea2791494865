//! cargo-fuzz target `trace_decode`: see `ckpt_tests::fuzzing::trace_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckpt_tests::fuzzing::trace_decode(data);
});
