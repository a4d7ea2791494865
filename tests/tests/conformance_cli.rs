//! `ckpt-conformance`'s exit status when its output cannot be written
//! (`tests/flink/README.md`: 141, as a shell reports a `SIGPIPE` death),
//! without a JVM: `--catalog` prints ckpt's own catalog.

use std::process::{Command, Stdio};

#[test]
fn the_catalog_into_an_unwritable_stdout_exits_141_without_a_panic() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap_or_else(|e| panic!("/dev/full: {e}"));
    let o = Command::new(env!("CARGO_BIN_EXE_ckpt-conformance"))
        .arg("--catalog")
        .stdin(Stdio::null())
        .stdout(full)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ckpt-conformance: {e}"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(stderr.contains("writing to stdout"), "stderr: {stderr}");
}
