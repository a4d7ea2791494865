//! The `--json` outputs against their published schemas: the files under
//! `model/schema/` are the ones the code generates, and what the commands
//! print reads back into the typed documents (every field known, none
//! missing).

use std::process::Command;

use ckpt_model::render::json::{schemas, AllJson, CheckJson, MergeJson, SimulateJson};

fn run(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ckpt-model"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn the_committed_schemas_are_the_ones_the_code_generates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    for (name, text) in schemas() {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            committed == text,
            "model/schema/{name} is stale: regenerate it with `ckpt-model schema {}`",
            name.trim_end_matches(".schema.json")
        );
        // The command prints the same.
        let (code, printed) = run(&["schema", name.trim_end_matches(".schema.json")]);
        assert_eq!((code, printed.as_str()), (0, text.as_str()));
    }
}

#[test]
fn every_json_output_reads_back_into_its_typed_document() {
    let small = ["--checkpoints", "1", "--faults", "0", "--json"];
    let check = |more: &[&str]| -> CheckJson {
        let mut args = vec!["check"];
        args.extend(small);
        args.extend(more);
        let (_, out) = run(&args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let holds = check(&[]);
    assert_eq!(holds.verdict, ckpt_model::Verdict::Holds);
    assert!(holds.coverage_partial.is_none());
    let legacy = check(&["--semantics", "legacy"]);
    let cx = legacy
        .counterexample
        .unwrap_or_else(|| panic!("no counterexample"));
    assert_eq!((cx.action_count, cx.step_count), (9, 8));
    assert_eq!(cx.steps.len(), 8);
    // The document's own exit status is the process's.
    let mut args = vec!["check", "--max-depth", "3"];
    args.extend(small);
    let (code, out) = run(&args);
    let cut: CheckJson = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!((code, cut.exit_status), (3, 3));
    assert!(cut.coverage_partial.is_some());

    let mut args = vec!["check", "--semantics", "all"];
    args.extend(small);
    let (code, out) = run(&args);
    let all: AllJson = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(code, 0);
    assert!(all.variants.iter().all(|v| v.as_expected), "{out}");

    let (_, out) = run(&["simulate", "--walks", "50", "--json"]);
    let sim: SimulateJson = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(sim.walks, 50);

    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("json-merge");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let mut files = Vec::new();
    for k in 0..2 {
        let shard = format!("{k}/2");
        let mut args = vec!["check", "--shard", &shard];
        args.extend(small);
        let (_, out) = run(&args);
        let f = dir.join(format!("{k}.json"));
        std::fs::write(&f, out).unwrap_or_else(|e| panic!("{e}"));
        files.push(f.to_string_lossy().into_owned());
    }
    let (code, out) = run(&["merge", &files[0], &files[1], "--json"]);
    let merged: MergeJson = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!((code, merged.verdict), (0, ckpt_model::Verdict::Holds));
}
