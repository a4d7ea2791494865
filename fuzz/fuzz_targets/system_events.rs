//! cargo-fuzz target `system_events`: see `ckpt_tests::fuzzing::system_events`.
//! Mutations work on whole actions (`ckpt_tests::fuzzing::mutate_story`);
//! default libFuzzer flags: `ckpt_fuzz` (fuzz/src/lib.rs).
#![no_main]

// libfuzzer-sys's `fuzz_target!`, plus the project's default libFuzzer
// flags (`ckpt_fuzz::fuzz_entry!`).
ckpt_fuzz::fuzz_entry!(ckpt_tests::fuzzing::system_events);

libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    ckpt_tests::fuzzing::mutate_story(
        "system_events",
        data,
        size,
        max_size,
        seed,
        &mut libfuzzer_sys::fuzzer_mutate,
    )
});

libfuzzer_sys::fuzz_crossover!(|a: &[u8], b: &[u8], out: &mut [u8], seed: u32| {
    ckpt_tests::fuzzing::cross_stories("system_events", a, b, out, seed)
});
