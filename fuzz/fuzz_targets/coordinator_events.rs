//! cargo-fuzz target `coordinator_events`: see `ckpt_tests::fuzzing::coordinator_events`.
//! Mutations work on whole actions (`ckpt_tests::fuzzing::mutate_story`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckpt_tests::fuzzing::coordinator_events(data);
});

libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    ckpt_tests::fuzzing::mutate_story(
        "coordinator_events",
        data,
        size,
        max_size,
        seed,
        &mut libfuzzer_sys::fuzzer_mutate,
    )
});

libfuzzer_sys::fuzz_crossover!(|a: &[u8], b: &[u8], out: &mut [u8], seed: u32| {
    ckpt_tests::fuzzing::cross_stories("coordinator_events", a, b, out, seed)
});
