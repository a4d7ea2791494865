//! cargo-fuzz target `coordinator_events`: see `ckpt_tests::fuzzing::coordinator_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckpt_tests::fuzzing::coordinator_events(data);
});
