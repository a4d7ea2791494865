//! cargo-fuzz target `task_events`: see `ckpt_tests::fuzzing::task_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckpt_tests::fuzzing::task_events(data);
});
