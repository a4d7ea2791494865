use super::*;
use crate::invariants::checked::{files_step, Rigor};
use crate::invariants::files::{names, FileLedger};

fn h(n: u64) -> StateHandle {
    StateHandle(n)
}

fn manager(semantics: Semantics) -> FilesState {
    FilesState::new(FilesConfig {
        segments_per_file: 2,
        semantics,
    })
    .expect("valid")
}

/// Runs `events` through the checked step, feeding the effects to a file
/// ledger in which `referenced` handles still exist; returns the state, the
/// outcomes and the first violation.
fn run(
    mut s: FilesState,
    events: &[FilesEvent],
    referenced: &[u64],
) -> (FilesState, Vec<Outcome>, Option<&'static str>) {
    let mut ledger = FileLedger::new();
    let mut outcomes = Vec::new();
    let exists = |x: StateHandle| referenced.contains(&x.0);
    for ev in events {
        let (t, verdict) = files_step(&s, ev, Rigor::Full);
        if let Err(v) = verdict {
            return (t.state, outcomes, Some(v.invariant));
        }
        for e in t.step.effects.iter().copied() {
            let r = match e {
                FilesEffect::Append { file, handle } => ledger.appended(file, handle),
                FilesEffect::Delete { file } => ledger.deleted(file, &exists).map(|_| ()),
            };
            if let Err(v) = r {
                return (t.state, outcomes, Some(v.invariant));
            }
        }
        outcomes.push(t.step.outcome);
        s = t.state;
    }
    (s, outcomes, None)
}

fn written(n: u64) -> FilesEvent {
    FilesEvent::SegmentWritten { handle: h(n) }
}

fn discard(n: u64) -> FilesEvent {
    FilesEvent::Discard { handle: h(n) }
}

#[test]
fn segments_share_a_file_until_it_is_full_then_a_new_one_opens() {
    let (s, outcomes, v) = run(
        manager(Semantics::Fixed),
        &[written(1), written(2), written(3), written(1)],
        &[1, 2, 3],
    );
    assert_eq!(v, None);
    let f0 = PhysicalFile(0);
    let f1 = PhysicalFile(1);
    assert_eq!(
        outcomes,
        [
            Outcome::Applied(Applied::Appended {
                file: f0,
                opened: true
            }),
            Outcome::Applied(Applied::Appended {
                file: f0,
                opened: false
            }),
            Outcome::Applied(Applied::Appended {
                file: f1,
                opened: true
            }),
            Outcome::Ignored(Ignored::KnownSegment),
        ]
    );
    assert_eq!(s.open_file(), Some(f1));
    assert_eq!(s.referenced(f0), [h(1), h(2)]);
}

#[test]
fn a_physical_file_is_deleted_once_after_its_last_reference() {
    let f0 = PhysicalFile(0);
    let (s, outcomes, v) = run(
        manager(Semantics::Fixed),
        &[
            written(1),
            written(2),
            discard(1),
            discard(1),
            discard(2),
            discard(2),
        ],
        &[],
    );
    assert_eq!(v, None);
    assert_eq!(
        outcomes[2..],
        [
            Outcome::Applied(Applied::Released { file: f0, refs: 1 }),
            Outcome::Ignored(Ignored::AlreadyReleased),
            Outcome::Applied(Applied::Deleted { file: f0 }),
            Outcome::Ignored(Ignored::UnknownSegment),
        ]
    );
    assert_eq!(s.files().count(), 0);
}

#[test]
fn flink_36125_a_logical_file_released_twice_deletes_the_file_under_a_referenced_segment() {
    let events = [written(1), written(2), discard(1), discard(1)];
    let bug = Semantics::Legacy(LegacyBug::LogicalFileReleasedTwice);
    let (_, _, v) = run(manager(bug), &events, &[2]);
    assert_eq!(v, Some(names::FILE_DELETED_ONCE));
    // The file ledger alone (the host's view) sees it too.
    let mut s = manager(bug);
    let mut ledger = FileLedger::new();
    for ev in events {
        for e in s.apply(ev).effects {
            let r = match e {
                FilesEffect::Append { file, handle } => ledger.appended(file, handle),
                FilesEffect::Delete { file } => ledger.deleted(file, &|x| x == h(2)).map(|_| ()),
            };
            if let Err(v) = r {
                assert_eq!(v.invariant, names::FILE_DELETED_ONCE);
                return;
            }
        }
    }
    panic!("the legacy manager deleted nothing");
}

#[test]
fn the_open_file_is_kept_with_no_reference_until_it_fills_or_the_job_restores() {
    let f0 = PhysicalFile(0);
    let (s, outcomes, v) = run(
        manager(Semantics::Fixed),
        &[
            written(1),
            discard(1),
            FilesEvent::Restored,
            FilesEvent::Restored,
        ],
        &[],
    );
    assert_eq!(v, None);
    assert_eq!(
        outcomes[1..],
        [
            Outcome::Applied(Applied::Released { file: f0, refs: 0 }),
            Outcome::Applied(Applied::Closed { file: f0 }),
            Outcome::Ignored(Ignored::NothingOpen),
        ]
    );
    assert_eq!(
        s.files().count(),
        0,
        "closed with nothing referenced: deleted"
    );
}

/// FLINK-35803, as ckpt decides it: after a restore, a file of the run
/// before takes no new segment; the restored segments keep their file and
/// it goes with the last of them.
#[test]
fn flink_35803_after_a_restore_no_file_of_before_takes_a_new_segment() {
    let f0 = PhysicalFile(0);
    let f1 = PhysicalFile(1);
    let (s, outcomes, v) = run(
        manager(Semantics::Fixed),
        &[written(1), FilesEvent::Restored, written(2), discard(1)],
        &[2],
    );
    assert_eq!(v, None);
    assert_eq!(
        outcomes,
        [
            Outcome::Applied(Applied::Appended {
                file: f0,
                opened: true
            }),
            Outcome::Applied(Applied::Closed { file: f0 }),
            Outcome::Applied(Applied::Appended {
                file: f1,
                opened: true
            }),
            Outcome::Applied(Applied::Deleted { file: f0 }),
        ]
    );
    assert_eq!(s.referenced(f1), [h(2)]);
}

#[test]
fn a_manager_without_room_for_a_segment_is_refused() {
    let config = FilesConfig {
        segments_per_file: 0,
        semantics: Semantics::Fixed,
    };
    assert_eq!(FilesState::new(config), Err(FilesError::NoSegments));
}
