use super::*;
use crate::task::LegacyBug;

const HEADER: &str = r#"{"kind":"header","version":1,"coordinator":null,"tasks":[[0,{"semantics":"Fixed","aborted_ids_max":16}]]}"#;
const BARRIER: &str = r#"{"kind":"task","now":0,"task":0,"event":{"BarrierReceived":{"checkpoint":1,"via":"Netty"}}}"#;

fn text(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// [`HEADER`] at the version this crate writes.
fn header_v2() -> String {
    HEADER.replace("\"version\":1", "\"version\":2")
}

#[test]
fn a_written_trace_reads_back_equal_and_byte_for_byte() {
    let trace = read_trace(text(&[HEADER, BARRIER]).as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    write_trace(&mut out, &trace).unwrap_or_else(|e| panic!("{e}"));
    let end = r#"{"kind":"end","steps":1}"#;
    assert_eq!(
        String::from_utf8_lossy(&out),
        text(&[&header_v2(), BARRIER, end])
    );
    assert_eq!(read_trace(&out[..]), Ok(trace));
}

#[test]
fn a_version_2_trace_cut_at_any_line_boundary_is_truncated() {
    let trace =
        read_trace(text(&[HEADER, BARRIER, BARRIER]).as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let expect = Expected::Violation {
        step: 2,
        invariant: "x".into(),
    };
    write_trace_expecting(&mut out, &trace, Some(&expect)).unwrap_or_else(|e| panic!("{e}"));
    let whole = String::from_utf8_lossy(&out).into_owned();
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 4);
    for keep in 1..lines.len() {
        let cut = text(&lines[..keep]);
        assert_eq!(
            read_trace(cut.as_bytes()),
            Err(TraceError::Truncated {
                line: keep + 1,
                steps: keep - 1
            }),
            "{cut}"
        );
    }
    let mut r = TraceReader::new(whole.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.version(), 2);
    assert_eq!(r.by_ref().count(), 2);
    assert_eq!(
        r.end(),
        Some(&TraceEnd {
            steps: 2,
            expect: Some(expect)
        })
    );
}

#[test]
fn an_end_line_must_count_the_events_and_end_the_trace() {
    let h = header_v2();
    let wrong = text(&[&h, BARRIER, r#"{"kind":"end","steps":2}"#]);
    assert_eq!(
        read_trace(wrong.as_bytes()),
        Err(TraceError::EndMismatch {
            line: 3,
            said: 2,
            read: 1
        })
    );
    let after = text(&[&h, r#"{"kind":"end","steps":0}"#, BARRIER]);
    assert_eq!(
        read_trace(after.as_bytes()),
        Err(TraceError::AfterEnd { line: 3 })
    );
    // Blank lines after the end are not lines.
    let blank = format!("{}\n\n", text(&[&h, r#"{"kind":"end","steps":0}"#]));
    assert!(read_trace(blank.as_bytes()).is_ok());
}

#[test]
fn a_version_1_trace_without_an_end_line_is_still_read() {
    let v1 = text(&[HEADER, BARRIER]);
    let mut r = TraceReader::new(v1.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.version(), 1);
    assert_eq!(r.by_ref().count(), 1);
    assert_eq!(r.end(), None);
}

#[test]
fn the_recorded_outcome_is_what_replay_says() {
    let abort = r#"{"kind":"task","now":0,"task":0,"event":{"NotifyAborted":{"checkpoint":1}}}"#;
    let mail = r#"{"kind":"task","now":0,"task":0,"event":{"CheckpointMail":{"checkpoint":1}}}"#;
    let mut trace =
        parse_trace(&text(&[HEADER, BARRIER, abort, mail])).unwrap_or_else(|e| panic!("{e}"));
    let clean = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(Expected::of(&clean), Expected::Clean);
    trace.set_task_semantics(Semantics::Legacy(LegacyBug::AbortRemovesResult));
    let bad = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    let e = Expected::of(&bad);
    assert_eq!(
        e,
        Expected::Violation {
            step: 3,
            invariant: "no_spurious_failure".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "invariant `no_spurious_failure` violated at step 3"
    );
}

#[test]
fn invalid_utf8_is_a_typed_error_not_replaced() {
    let mut bytes = text(&[HEADER]).into_bytes();
    bytes.extend_from_slice(b"{\"kind\":\"task\",\xff}\n");
    assert_eq!(
        read_trace(&bytes[..]),
        Err(TraceError::InvalidUtf8 { line: 2, byte: 16 })
    );
}

/// A header declaring tasks `0..n`.
fn header_with_tasks(n: usize) -> String {
    let tasks: Vec<String> = (0..n)
        .map(|t| format!(r#"[{t},{{"semantics":"Fixed","aborted_ids_max":16}}]"#))
        .collect();
    format!(
        r#"{{"kind":"header","version":1,"coordinator":null,"tasks":[{}]}}"#,
        tasks.join(",")
    )
}

#[test]
fn a_header_may_declare_exactly_tasks_max_tasks_and_not_one_more() {
    let at = read_trace(text(&[&header_with_tasks(TASKS_MAX)]).as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(at.tasks.len(), TASKS_MAX);
    let over = read_trace(text(&[&header_with_tasks(TASKS_MAX + 1)]).as_bytes());
    assert!(
        matches!(over, Err(TraceError::BadTasks { line: 1, .. })),
        "{over:?}"
    );
}

#[test]
fn a_line_of_exactly_line_max_bytes_with_its_newline_is_read_and_one_more_byte_is_too_long() {
    // The header padded with blanks to `total` bytes, newline included.
    let padded = |total: usize| {
        let mut l = HEADER.to_string();
        l.push_str(&" ".repeat(total - HEADER.len() - 1));
        l.push('\n');
        l
    };
    let mut at = padded(LINE_MAX_BYTES);
    assert_eq!(at.len(), LINE_MAX_BYTES);
    // The long line is read whole: the event after it is the next line.
    at.push_str(BARRIER);
    at.push('\n');
    let trace = read_trace(at.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.tasks.len(), 1);
    assert_eq!(trace.steps.len(), 1);
    let over = padded(LINE_MAX_BYTES + 1);
    assert_eq!(
        read_trace(over.as_bytes()),
        Err(TraceError::LineTooLong { line: 1 })
    );
}

#[test]
fn the_version_is_checked_before_any_other_header_field() {
    let v3 = r#"{"kind":"header","version":3,"machines":{"something":"new"}}"#;
    assert_eq!(
        parse_trace(v3),
        Err(TraceError::UnsupportedVersion {
            line: 1,
            version: "3".into()
        })
    );
}

#[test]
fn an_error_names_its_line_once_and_an_undeclared_task_by_id() {
    let bad = text(&[
        HEADER,
        "",
        r#"{"kind":"task","now":0,"task":0,"event":{"Bogus":1}}"#,
    ]);
    let e = parse_trace(&bad).err().unwrap_or(TraceError::Empty);
    assert!(matches!(e, TraceError::Malformed { line: 3, .. }), "{e}");
    assert!(e.to_string().starts_with("line 3: malformed"), "{e}");
    assert!(!e.to_string().contains(" at line "), "{e}");
    let cut = text(&[HEADER, &BARRIER[..30]]);
    let e = parse_trace(&cut).err().unwrap_or(TraceError::Empty);
    assert!(
        e.to_string().starts_with("line 2, column 30: malformed"),
        "{e}"
    );
    assert!(!e.to_string().contains(" at line "), "{e}");
    let undeclared = text(&[HEADER, &BARRIER.replace("\"task\":0", "\"task\":7")]);
    let e = parse_trace(&undeclared).err().unwrap_or(TraceError::Empty);
    assert_eq!(
        e,
        TraceError::UndeclaredTask {
            line: 2,
            task: TaskId(7),
            declared: "declared: 0".into()
        }
    );
    assert!(e.to_string().contains("task 7"), "{e}");
}

#[test]
fn the_reader_streams_and_stops_after_an_error() {
    let t = text(&[HEADER, BARRIER, "not json", BARRIER]);
    let mut r = TraceReader::new(t.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.header().tasks.len(), 1);
    assert!(matches!(r.next(), Some(Ok(TraceLine::Task { .. }))));
    assert_eq!(r.line(), 2);
    assert!(matches!(
        r.next(),
        Some(Err(TraceError::Malformed { line: 3, .. }))
    ));
    assert!(r.next().is_none());
}

#[test]
fn a_streaming_reader_replays_under_the_semantics_set_through_header_mut() {
    let legacy = Semantics::Legacy(LegacyBug::AbortRemovesResult);
    let t = text(&[HEADER, BARRIER]);
    let mut r = TraceReader::new(t.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    r.header_mut().set_task_semantics(legacy);
    assert_eq!(r.header().tasks[0].1.semantics, legacy);
    // The header keeps the change while the steps stream.
    assert!(matches!(r.next(), Some(Ok(TraceLine::Task { .. }))));
    assert_eq!(r.header().tasks[0].1.semantics, legacy);
}

#[test]
fn an_undeclared_task_error_lists_eight_declared_tasks_and_counts_the_rest() {
    let tasks: Vec<String> = (0..9)
        .map(|t| format!(r#"[{t},{{"semantics":"Fixed","aborted_ids_max":16}}]"#))
        .collect();
    let header = HEADER.replace(
        r#"[[0,{"semantics":"Fixed","aborted_ids_max":16}]]"#,
        &format!("[{}]", tasks.join(",")),
    );
    let undeclared = text(&[&header, &BARRIER.replace("\"task\":0", "\"task\":12")]);
    let e = parse_trace(&undeclared).err().unwrap_or(TraceError::Empty);
    assert_eq!(
        e,
        TraceError::UndeclaredTask {
            line: 2,
            task: TaskId(12),
            declared: "declared: 0, 1, 2, 3, 4, 5, 6, 7, ... (9 tasks)".into()
        }
    );
}

#[test]
fn a_replayer_counts_the_steps_it_was_given() {
    let trace =
        parse_trace(&text(&[HEADER, BARRIER, BARRIER, BARRIER])).unwrap_or_else(|e| panic!("{e}"));
    let mut r = Replayer::new(&trace).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.steps(), 0);
    for (i, line) in trace.steps.iter().enumerate() {
        let step = r.step(line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((step.step, r.steps()), (i + 1, i + 1));
    }
}

#[test]
fn steps_are_numbered_from_one_and_misuse_is_reported() {
    let mail = r#"{"kind":"task","now":0,"task":0,"event":{"CheckpointMail":{"checkpoint":1}}}"#;
    let wrong = BARRIER.replace("Netty", "Writer");
    let trace =
        parse_trace(&text(&[HEADER, BARRIER, &wrong, mail])).unwrap_or_else(|e| panic!("{e}"));
    let report = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    let numbers: Vec<usize> = report.steps.iter().map(|s| s.step).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    assert_eq!(report.rejected, vec![2]);
    assert!(report.steps[1]
        .rejected
        .as_deref()
        .is_some_and(|r| r.contains("Writer")));
    assert_eq!(report.violation, None);
}

#[test]
fn task_semantics_can_be_overridden() {
    let abort = r#"{"kind":"task","now":0,"task":0,"event":{"NotifyAborted":{"checkpoint":1}}}"#;
    let mail = r#"{"kind":"task","now":0,"task":0,"event":{"CheckpointMail":{"checkpoint":1}}}"#;
    let mut trace =
        parse_trace(&text(&[HEADER, BARRIER, abort, mail])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replay(&trace).map(|r| r.violation), Ok(None));
    trace.set_task_semantics(Semantics::Legacy(LegacyBug::AbortRemovesResult));
    let report = replay(&trace).unwrap_or_else(|e| panic!("{e}"));
    let (step, v) = report.violation.unwrap_or_else(|| panic!("not caught"));
    assert_eq!((step, v.invariant), (3, "no_spurious_failure"));
}

#[test]
fn a_hand_built_trace_with_an_undeclared_machine_is_an_error() {
    let mut trace = parse_trace(HEADER).unwrap_or_else(|e| panic!("{e}"));
    trace.steps.push(TraceLine::Coordinator {
        now: Millis(0),
        event: crate::coordinator::CoordinatorEvent::StartScheduler,
    });
    assert!(matches!(
        replay(&trace),
        Err(ReplayError::BadStep { step: 1, .. })
    ));
}

#[test]
fn a_task_finished_event_and_the_checkpoints_after_finish_setting_round_trip() {
    use crate::{AttemptNo, JobId};
    let mut settings = CoordinatorSettings::with_tasks(JobId(1), 1);
    let on = Trace {
        coordinator: Some(settings.clone()),
        tasks: Vec::new(),
        steps: vec![TraceLine::Coordinator {
            now: Millis(0),
            event: CoordinatorEvent::TaskFinished {
                task: TaskId(0),
                attempt: AttemptNo(0),
            },
        }],
    };
    let mut out = Vec::new();
    write_trace(&mut out, &on).unwrap_or_else(|e| panic!("{e}"));
    let written = String::from_utf8_lossy(&out).into_owned();
    // The default (on) is left out of the header: older traces stay as
    // they were, and read back with it on.
    assert!(
        !written.contains("checkpoints_after_tasks_finish"),
        "{written}"
    );
    assert!(
        written.contains(r#""event":{"TaskFinished":{"task":0,"attempt":0}}"#),
        "{written}"
    );
    assert_eq!(read_trace(&out[..]), Ok(on.clone()));
    settings.checkpoints_after_tasks_finish = false;
    let off = Trace {
        coordinator: Some(settings),
        ..on
    };
    let mut out = Vec::new();
    write_trace(&mut out, &off).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read_trace(&out[..]), Ok(off));
}
