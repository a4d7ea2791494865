//! Replays the committed fuzz seed corpus (fuzz/corpus/<target>/*) through the
//! same harness the cargo-fuzz targets call (`ckpt_tests::fuzzing`), so every
//! stable `cargo test` run exercises it without nightly or libFuzzer.

use std::path::PathBuf;

use ckpt_tests::fuzzing::{run_target, TARGETS};

#[test]
fn committed_seed_corpus_replays_cleanly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for target in TARGETS {
        let dir = root.join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no seeds for {target}");
        for f in files {
            let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let name = f.display().to_string();
            let r = std::panic::catch_unwind(|| run_target(target, &data));
            assert!(r.is_ok(), "{target}: seed {name} fails");
        }
    }
}

#[test]
fn harness_survives_degenerate_inputs() {
    for target in TARGETS {
        for data in [
            &b""[..],
            &[0u8; 64][..],
            &[0xffu8; 64][..],
            b"{\"kind\":\"header\"}\n",
        ] {
            run_target(target, data);
        }
    }
}
