//! cargo-fuzz target `system_events`: see `ckpt_tests::fuzzing::system_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckpt_tests::fuzzing::system_events(data);
});
