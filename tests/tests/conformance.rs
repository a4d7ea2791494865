//! The conformance comparator (`ckpt_tests::conformance`): normalization of
//! recorded harness lines and of ckpt's effects, the catalog's recognizers
//! on recorded divergences (the regression files in tests/flink/regressions,
//! replayed without a JVM), the generator's determinism, and a bounded run
//! against the real Flink JVMs when the harness is built.

use std::path::PathBuf;

use ckpt_tests::conformance::ckpt_side::CkptSide;
use ckpt_tests::conformance::decision::{Abort, AckClass, RequestEnd};
use ckpt_tests::conformance::event::{Event, SeqConfig, TriggerAsk};
use ckpt_tests::conformance::profile::{FlinkProfile, Version};
use ckpt_tests::conformance::{catalog, flink_side, gen, Options, Replay};
use serde_json::Value;

fn line(s: &str) -> Value {
    serde_json::from_str(s).expect("a recorded harness line")
}

// A completion recorded from Flink 1.20.0 (notify-args scenario): the
// completing ack of checkpoint 5 evicted checkpoint 1.
const COMPLETE_1_20: &str = r#"{"type":"response","cmd":"ack","ok":true,"result":{"ack_class":"success","accepted":true},"now":0,"rpcs":[{"rpc":"notify_complete","task":0,"attempt":0,"checkpoint":5,"ts":0,"last_subsumed":1},{"rpc":"notify_complete","task":1,"attempt":0,"checkpoint":5,"ts":0,"last_subsumed":1}],"completed":[{"checkpoint":5,"savepoint":false,"stored":true}],"aborted":[],"store_ops":[{"op":"add","checkpoint":5,"savepoint":false,"removed":[1],"result":"ok","returned_subsumed":1}],"discarded":[{"handle":11},{"handle":10}],"failure_manager":[{"method":"handleCheckpointSuccess","checkpoint":5,"counter_after":0}],"fail_job":[],"requests":[{"request":5,"kind":"checkpoint","status":"completed","checkpoint":5}],"uncaught":[],"state":{"pending":[],"store":[{"checkpoint":5,"savepoint":false,"ts":0,"handles":[51,50]}],"queued":0,"triggering":false,"periodic":false,"shutdown":false,"failure_counter":0,"next_id":6,"timers":[],"tasks":[{"task":0,"attempt":0,"state":"RUNNING"},{"task":1,"attempt":0,"state":"RUNNING"}],"armed_failures":[],"hooks_waiting":[]}}"#;

// A decline recorded from Flink 1.20.0 that failed the job (tolerance 0).
const DECLINE_1_20: &str = r#"{"type":"response","cmd":"decline","ok":true,"result":{"flink_reason":"CHECKPOINT_DECLINED"},"now":0,"rpcs":[{"rpc":"notify_aborted","task":0,"attempt":0,"checkpoint":4,"latest_completed":1,"ts":0},{"rpc":"notify_aborted","task":1,"attempt":0,"checkpoint":4,"latest_completed":1,"ts":0}],"completed":[],"aborted":[{"checkpoint":4,"savepoint":false,"reason":"CHECKPOINT_DECLINED"}],"store_ops":[],"discarded":[],"failure_manager":[{"method":"handleCheckpointException","checkpoint":4,"reason":"CHECKPOINT_DECLINED","task":0,"attempt":0,"counter_after":0}],"fail_job":[{"call":"failJobDueToTaskFailure","task":0,"attempt":0,"message":"Exceeded checkpoint tolerable failure threshold."}],"requests":[{"request":4,"kind":"checkpoint","status":"failed","reason":"CHECKPOINT_DECLINED"}],"uncaught":[],"state":{"pending":[],"store":[{"checkpoint":1,"savepoint":false,"ts":0,"handles":[11,10]}],"queued":0,"triggering":false,"periodic":false,"shutdown":false,"failure_counter":0,"next_id":5,"timers":[{"kind":"periodic","at":3000}],"tasks":[{"task":0,"attempt":0,"state":"RUNNING"},{"task":1,"attempt":0,"state":"RUNNING"}],"armed_failures":[],"hooks_waiting":[]}}"#;

#[test]
fn flink_completion_line_normalizes_to_its_decision() {
    let d = flink_side::decision(&line(COMPLETE_1_20), &FlinkProfile::of(Version::V1_20)).unwrap();
    assert_eq!(d.completed, vec![(5, false)]);
    assert_eq!(d.completes.len(), 2);
    assert!(d.completes.iter().all(|m| m.last_subsumed == Some(Some(1))));
    assert_eq!(d.discarded, vec![10, 11], "discards are sorted");
    assert_eq!(d.requests, vec![(5, RequestEnd::Completed(5))]);
    assert_eq!(d.ack, Some(AckClass::Success));
    assert_eq!(d.state.store, vec![(5, false)]);
    assert_eq!(d.fail_job, Some(0));
    // The same line read as 1.11 (which carries no lastSubsumed) drops the field.
    let d11 =
        flink_side::decision(&line(COMPLETE_1_20), &FlinkProfile::of(Version::V1_11)).unwrap();
    assert!(d11.completes.iter().all(|m| m.last_subsumed.is_none()));
}

#[test]
fn flink_decline_line_maps_reasons_fail_job_and_timers() {
    let d = flink_side::decision(&line(DECLINE_1_20), &FlinkProfile::of(Version::V1_20)).unwrap();
    assert_eq!(
        d.aborted,
        vec![(4, Abort::Declined("CHECKPOINT_DECLINED".to_owned()))]
    );
    assert_eq!(d.fail_job, Some(1));
    assert_eq!(d.state.failure_counter, Some(0));
    assert_eq!(d.state.periodic_at, Some(3000));
    assert!(d.aborts.iter().all(|m| m.latest_completed == Some(Some(1))));
    assert_eq!(
        flink_side::abort_of("CHECKPOINT_COORDINATOR_SUSPEND"),
        Abort::Suspended
    );
    assert_eq!(
        flink_side::abort_of("SOMETHING_NEW"),
        Abort::Other("SOMETHING_NEW".to_owned())
    );
}

#[test]
fn a_malformed_line_is_an_error_not_a_decision() {
    let no_state = line(r#"{"type":"response","cmd":"ack","ok":true,"result":{}}"#);
    assert!(flink_side::decision(&no_state, &FlinkProfile::of(Version::V2_3)).is_err());
    let odd_rpc = line(
        r#"{"type":"response","cmd":"ack","ok":true,"rpcs":[{"rpc":"teleport"}],"state":{"pending":[],"store":[],"queued":0,"failure_counter":0}}"#,
    );
    assert!(flink_side::decision(&odd_rpc, &FlinkProfile::of(Version::V2_3)).is_err());
}

fn config(tasks: u32) -> SeqConfig {
    SeqConfig {
        tasks,
        trigger: vec![0],
        interval: 1000,
        timeout: 1000,
        min_pause: 0,
        max_concurrent: 1,
        tolerable_failures: 0,
        retained: 1,
        hooks: 0,
        scheduler: false,
    }
}

#[test]
fn ckpt_side_answers_io_at_once_and_normalizes_a_completion() {
    let profile = FlinkProfile::of(Version::V1_20);
    let mut side = CkptSide::new(profile, &config(2)).unwrap();
    let t = side
        .apply(&Event::Trigger(TriggerAsk::Checkpoint { forced: false }))
        .unwrap();
    assert_eq!(
        t.triggers.len(),
        1,
        "task 0 is triggered with the id the counter gave: {t:?}"
    );
    assert_eq!((t.triggers[0].checkpoint, t.triggers[0].task), (1, 0));
    let ack = |task, state| Event::Ack {
        task,
        checkpoint: 1,
        state: Some(state),
        stale: false,
    };
    assert_eq!(
        side.apply(&ack(0, 10)).unwrap().ack,
        Some(AckClass::Success)
    );
    let done = side.apply(&ack(1, 11)).unwrap();
    assert_eq!(done.completed, vec![(1, false)]);
    assert_eq!(done.completes.len(), 2, "both tasks notified");
    assert_eq!(done.requests, vec![(1, RequestEnd::Completed(1))]);
    assert_eq!(done.state.store, vec![(1, false)]);
    // A store failure armed: the next completion fails and is discarded.
    side.apply(&Event::FailNextStore).unwrap();
    side.apply(&Event::Trigger(TriggerAsk::Checkpoint { forced: false }))
        .unwrap();
    let a0 = Event::Ack {
        task: 0,
        checkpoint: 2,
        state: Some(20),
        stale: false,
    };
    let a1 = Event::Ack {
        task: 1,
        checkpoint: 2,
        state: Some(21),
        stale: false,
    };
    side.apply(&a0).unwrap();
    let failed = side.apply(&a1).unwrap();
    assert_eq!(failed.aborted, vec![(2, Abort::FinalizeFailure)]);
    assert_eq!(failed.discarded, vec![20, 21]);
    // After a shutdown a trigger fails with the shutdown.
    side.apply(&Event::Shutdown(
        ckpt_tests::conformance::event::Status::Canceled,
    ))
    .unwrap();
    let late = side.apply(&Event::Trigger(TriggerAsk::Savepoint)).unwrap();
    assert_eq!(
        late.requests,
        vec![(3, RequestEnd::Failed(Abort::Shutdown))]
    );
}

#[test]
fn a_stale_ack_without_an_earlier_attempt_is_refused_by_ckpts_side() {
    let mut side = CkptSide::new(FlinkProfile::of(Version::V2_3), &config(1)).unwrap();
    let stale = Event::Ack {
        task: 0,
        checkpoint: 1,
        state: None,
        stale: true,
    };
    assert!(side.apply(&stale).is_err());
}

#[test]
fn the_generator_is_a_function_of_its_seed() {
    let p = FlinkProfile::of(Version::V1_11);
    let a = gen::sequence(&p, 42, 7, 20).unwrap();
    let b = gen::sequence(&p, 42, 7, 20).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.seed, 49, "sequence seed = run seed + index");
    assert_eq!(
        gen::sequence(&p, 49, 0, 20).unwrap(),
        a,
        "a sequence reruns alone from its seed"
    );
    assert_ne!(gen::sequence(&p, 43, 7, 20).unwrap(), a);
    // 2.3 has no failUnacknowledgedPendingCheckpointsFor: never legacy failures.
    let p23 = FlinkProfile::of(Version::V2_3);
    for i in 0..200 {
        let s = gen::sequence(&p23, 1, i, 20).unwrap();
        assert!(!s
            .events
            .iter()
            .any(|e| matches!(e, Event::TaskFailed { legacy: true, .. })));
        // A scheduler start only where the first periodic delay is fixed.
        if s.events.contains(&Event::StartScheduler) {
            assert_eq!(s.config.min_pause, s.config.interval);
        }
    }
}

#[test]
fn catalog_entries_are_named_once_and_documented() {
    let mut names: Vec<&str> = catalog::CATALOG.iter().map(|e| e.name).collect();
    let n = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), n, "a name appears twice");
    for e in catalog::CATALOG {
        assert!(
            !e.pattern.is_empty() && !e.flink.is_empty() && !e.ckpt.is_empty() && !e.why.is_empty(),
            "{}",
            e.name
        );
        if let catalog::Class::Gap { fix } = e.class {
            assert!(!fix.is_empty(), "{} has no proposed fix", e.name);
        }
        assert_eq!(catalog::by_name(e.name).map(|x| x.name), Some(e.name));
    }
}

fn regressions() -> Vec<(PathBuf, Replay)> {
    let dir = flink_side::default_harness_dir().join("regressions");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/flink/regressions") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            let replay: Replay = serde_json::from_str(&text).unwrap();
            out.push((path, replay));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no regression files in {}", dir.display());
    out
}

/// Every regression file is still recognized as what its `expect` says.
/// A file is written at a divergence, with its signature (`gap:NAME` for
/// a known gap); when the reducer
/// changes or the catalog reclassifies the difference, the file starts to
/// agree and this test says which to update:
/// - `gap:NAME`: the same gap is found again (only the signature is
///   compared, not the event it is found at), and allowing it explains the
///   sequence;
/// - `choice:NAME`: the gap became a named choice: the replay recognizes
///   it and finds no divergence;
/// - `closed:NAME`: the reducer closed the gap: the name is gone from the
///   catalog and ckpt agrees with every recorded Flink decision, the one it
///   used to differ on included.
///
/// Any other `expect` (an unexplained divergence's `EVENT:fields`, a
/// rerun's `agree`) fails: such a file is relabelled before it goes in.
#[test]
fn regression_files_replay_to_their_recorded_divergence() {
    for (path, r) in regressions() {
        let file = path.display();
        let found = r.replay(&[]).unwrap_or_else(|e| panic!("{file}: {e}"));
        if let Some(closed) = r.expect.strip_prefix("closed:") {
            assert!(
                catalog::by_name(closed).is_none(),
                "{file}: {closed} is closed but still in the catalog"
            );
            assert!(
                found.divergence.is_none(),
                "{file}: a closed gap diverges again: {:?}",
                found.divergence
            );
            continue;
        }
        if let Some(choice) = r.expect.strip_prefix("choice:") {
            let entry = catalog::by_name(choice)
                .unwrap_or_else(|| panic!("{file}: {choice} is not in the catalog"));
            assert!(!entry.is_gap(), "{file}: {choice} is a gap again");
            assert!(found.divergence.is_none(), "{file}: {:?}", found.divergence);
            assert!(
                found.names.contains(&entry.name),
                "{file}: {choice} not recognized: {:?}",
                found.names
            );
            continue;
        }
        let got = found.divergence.as_ref().map(|d| d.signature());
        assert_eq!(got.as_deref(), Some(r.expect.as_str()), "{file}");
        let gap = r
            .expect
            .strip_prefix("gap:")
            .unwrap_or_else(|| panic!("{file}: expect is not gap:, choice: or closed:"));
        // Allowing the gap explains it: the sequence then agrees up to the
        // end of the record (files end at the divergence).
        let allowed = r
            .replay(&[gap.to_owned()])
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            allowed.divergence.is_none(),
            "{file}: {:?}",
            allowed.divergence
        );
        assert!(allowed.names.contains(&catalog::by_name(gap).unwrap().name));
    }
}

/// A bounded run against the real Flink JVMs (skipped, with a message,
/// only when the harness is not built: tests/flink/build.sh).
#[test]
fn bounded_run_against_flink() {
    let harness = flink_side::default_harness_dir();
    let versions: Vec<Version> = Version::ALL
        .into_iter()
        .filter(|v| ckpt_tests::conformance::harness_ready(&harness, *v))
        .collect();
    if versions.is_empty() {
        eprintln!(
            "SKIPPED bounded_run_against_flink: the Flink harness is not built in {} (run tests/flink/fetch.sh && tests/flink/build.sh, or set CKPT_FLINK_CACHE)",
            flink_side::cache_dir().display()
        );
        return;
    }
    let gaps: Vec<String> = catalog::CATALOG
        .iter()
        .filter(|e| e.is_gap())
        .map(|e| e.name.to_owned())
        .collect();
    let out = std::env::temp_dir().join(format!("ckpt-conformance-test-{}", std::process::id()));
    let opts = Options {
        seed: 20_261_202,
        sequences: 40,
        events: 20,
        versions: versions.clone(),
        jobs: 1,
        allow: gaps,
        out_dir: out.clone(),
        harness_dir: harness,
        max_reports: 4,
        progress: false,
        draws: gen::Draws::default(),
    };
    for v in versions {
        let r = ckpt_tests::conformance::run_version(v, &opts, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.sequences, 40);
        assert!(r.compared > 0, "{v}: nothing compared");
        let found: Vec<String> = r
            .found
            .values()
            .map(ckpt_tests::conformance::describe)
            .collect();
        assert!(
            r.passed(),
            "{v}: unexplained divergences:\n{}",
            found.join("\n")
        );
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn a_stop_with_savepoint_is_fed_and_recorded_as_synchronous_on_both_sides() {
    let mut side = CkptSide::new(FlinkProfile::of(Version::V1_20), &config(1)).unwrap();
    let stop = Event::Trigger(TriggerAsk::StopWithSavepoint { terminate: true });
    let t = side.apply(&stop).unwrap();
    assert_eq!(t.triggers.len(), 1, "the savepoint is triggered: {t:?}");
    let m = &t.triggers[0];
    assert!(m.savepoint && m.sync && m.terminate, "{m:?}");
    // A later trigger is refused while the stop runs.
    let later = side
        .apply(&Event::Trigger(TriggerAsk::Checkpoint { forced: true }))
        .unwrap();
    assert_eq!(
        later.requests,
        vec![(2, RequestEnd::Failed(Abort::Stopping))]
    );
    // A suspending stop is synchronous but does not terminate.
    let mut side = CkptSide::new(FlinkProfile::of(Version::V1_11), &config(1)).unwrap();
    let suspend = Event::Trigger(TriggerAsk::StopWithSavepoint { terminate: false });
    let m = side.apply(&suspend).unwrap().triggers[0].clone();
    assert!(m.sync && !m.terminate, "{m:?}");
    // Flink is asked for triggerSynchronousSavepoint(terminate, …).
    let cmd = flink_side::command(&suspend, &Value::Null);
    assert_eq!(cmd["kind"], "savepoint");
    assert_eq!(cmd["sync"], true);
    assert_eq!(cmd["terminate"], false);
    // Flink's trigger RPC reads back the same way (post_action TERMINATE).
    let resp = line(
        r#"{"type":"response","cmd":"trigger","ok":true,"result":{"request":1},"now":0,"rpcs":[{"rpc":"trigger","task":0,"attempt":0,"checkpoint":1,"ts":0,"type":"SAVEPOINT_TERMINATE","savepoint":true,"sync":true,"post_action":"TERMINATE"}],"completed":[],"aborted":[],"store_ops":[],"discarded":[],"failure_manager":[],"fail_job":[],"requests":[],"uncaught":[],"state":{"pending":[],"store":[],"queued":0,"triggering":false,"periodic":false,"shutdown":false,"failure_counter":0,"next_id":2,"timers":[],"tasks":[],"armed_failures":[],"hooks_waiting":[]}}"#,
    );
    let d = flink_side::decision(&resp, &FlinkProfile::of(Version::V1_11)).unwrap();
    assert!(d.triggers[0].sync && d.triggers[0].terminate);
}

/// The catalog table in tests/flink/README.md is the catalog, entry by
/// entry and in the order the recognizers run: a changed pattern or a new
/// entry that the README does not show fails here (the expected table is
/// printed to paste).
#[test]
fn the_readme_catalog_table_is_the_catalog() {
    let readme = std::fs::read_to_string(flink_side::default_harness_dir().join("README.md"))
        .expect("tests/flink/README.md");
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| name | class | pattern |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let expected: Vec<String> = catalog::CATALOG
        .iter()
        .map(|e| {
            let class = match e.class {
                catalog::Class::Choice => "choice".to_owned(),
                catalog::Class::Gap { fix } => format!("gap (proposed fix: {fix})"),
            };
            format!(
                "| `{}` | {class} | {} | {} | {} | {} | {:?} |",
                e.name, e.pattern, e.flink, e.ckpt, e.why, e.after
            )
        })
        .collect();
    assert!(
        rows == expected,
        "tests/flink/README.md's catalog table differs from the catalog; it should read:\n{}",
        expected.join("\n")
    );
}

/// Task finishes are drawn only with `Draws { finishes: true }`
/// (`--finished-tasks`), and ckpt's side takes every one it is given.
#[test]
fn task_finishes_are_drawn_only_when_asked_for() {
    let p = FlinkProfile::of(Version::V2_3);
    let finishes = |s: &ckpt_tests::conformance::event::Sequence| {
        s.events
            .iter()
            .filter(|e| matches!(e, Event::TaskFinished { .. }))
            .count()
    };
    let mut drawn = 0;
    for i in 0..200 {
        assert_eq!(finishes(&gen::sequence(&p, 7, i, 20).unwrap()), 0);
        let with = gen::sequence_with(&p, 7, i, 20, gen::Draws { finishes: true }).unwrap();
        drawn += finishes(&with);
    }
    assert!(drawn > 20, "{drawn} finishes in 200 sequences");
}
