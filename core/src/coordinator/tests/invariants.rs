//! Every invariant check can fail: each one shown catching the state or step it forbids.

use super::*;

// ============================================================================
// Every invariant check can fail
// ============================================================================

fn violated(r: Result<(), Violation>) -> &'static str {
    match r {
        Ok(()) => panic!("expected a violation"),
        Err(v) => v.invariant,
    }
}

/// One pending checkpoint 1 (task 0 acked with handle 100).
fn base() -> H {
    let mut h = H::with(CoordinatorSettings {
        max_concurrent: 2,
        queue_max: 2,
        retained_max: 2,
        ..settings()
    });
    h.user_cp(0, 1);
    h.step(0, ack(0, 1, 100));
    h
}

fn fake_step(effects: Vec<E>, outcome: Outcome) -> Step {
    Step {
        effects,
        outcome,
        clock: Clock::Monotonic,
    }
}

fn fake_completed(id: u64, savepoint: bool) -> Completed {
    Completed {
        id: cp(id),
        request: None,
        savepoint,
        timestamp: ms(0),
        handles: Default::default(),
    }
}

#[test]
fn invariant_pending_bounded_can_fail() {
    let mut s = base().s;
    for id in [2, 3] {
        let mut p = s.pending_checkpoint(cp(1)).expect("pending").to_record();
        p.id = cp(id);
        s.pending.insert(p);
        s.cold.timers.insert(Timer::Timeout(cp(id)), ms(1));
    }
    assert_eq!(violated(check_state(&s)), names::PENDING_BOUNDED);
}

#[test]
fn invariant_attempts_only_move_forward_can_fail() {
    let mut h = H::new();
    h.step(0, failed(1, 0));
    let before = h.s.clone();
    let mut revived = h.s.clone();
    revived.cold.tasks.set(
        1,
        TaskStatus {
            attempt: AttemptNo(0),
            running: true,
            finished: false,
        },
    );
    let step = fake_step(vec![], applied(Applied::TaskUpdated { aborted: 0 }));
    let v = check_step(&before, &running(1, 0), &step, &revived);
    assert_eq!(violated(v), names::ATTEMPTS_FORWARD);
    // Going back to an older attempt is caught too.
    h.step(0, running(1, 3));
    let newer = h.s.clone();
    let mut older = h.s.clone();
    older.cold.tasks.set(
        1,
        TaskStatus {
            attempt: AttemptNo(2),
            running: true,
            finished: false,
        },
    );
    let v = check_step(&newer, &running(1, 2), &step, &older);
    assert_eq!(violated(v), names::ATTEMPTS_FORWARD);
}

#[test]
fn invariant_generation_only_moves_forward_can_fail() {
    let recover = |generation| Ev::Recover {
        checkpoints: vec![],
        last_id: None,
        generation: Generation(generation),
    };
    let mut h = H::new();
    let step = h.step(0, recover(5));
    let five = h.s.clone();
    let mut two = H::new();
    two.step(0, recover(2));
    // A second `Recover` that lowered the token (what the reducer did
    // before it refused a second `Recover` as not fresh) is caught.
    let v = check_step(&five, &recover(2), &step, &two.s);
    assert_eq!(violated(v), names::GENERATION_FORWARD);
    // So is a raise by any event but `Recover`.
    let mut seven = H::new();
    seven.step(0, recover(7));
    let v = check_step(&five, &Ev::StartScheduler, &step, &seven.s);
    assert_eq!(violated(v), names::GENERATION_FORWARD);
    // The raise `Recover` makes from a fresh state holds.
    assert_eq!(check_step(&H::new().s, &recover(5), &step, &five), Ok(()));
}

#[test]
fn invariant_at_most_one_queued_can_fail() {
    let mut s = base().s;
    for n in [10, 11] {
        s.cold.queue.push_back(Request {
            id: rq(n),
            kind: user(),
            requested_at: ms(0),
            hooks_for: None,
        });
    }
    assert_eq!(violated(check_state(&s)), names::ONE_QUEUED);
}

#[test]
fn invariant_queue_resumable_can_fail() {
    // A request left queued with no trigger in progress and a free slot:
    // nothing would ever resume it.
    let mut s = base().s;
    assert!(s.in_flight().is_none());
    assert!(s.pending().count() < s.config().max_concurrent());
    s.cold.queue.push_back(Request {
        id: rq(10),
        kind: user(),
        requested_at: ms(0),
        hooks_for: None,
    });
    assert_eq!(violated(check_state(&s)), names::QUEUE_RESUMABLE);
}

#[test]
fn invariant_queue_bounded_can_fail() {
    let mut s = base().s;
    for n in [10, 11, 12] {
        s.cold.queue.push_back(Request {
            id: rq(n),
            kind: savepoint(),
            requested_at: ms(0),
            hooks_for: None,
        });
    }
    assert_eq!(violated(check_state(&s)), names::QUEUE_BOUNDED);
}

#[test]
fn invariant_ack_count_can_fail() {
    let mut s = base().s;
    if let Some(p) = s.pending.get_mut(&cp(1)) {
        p.remaining = 0;
    }
    assert_eq!(violated(check_state(&s)), names::ACK_COUNT);
}

#[test]
fn invariant_timeout_timers_can_fail() {
    let mut s = base().s;
    s.cold.timers.remove(&Timer::Timeout(cp(1)));
    assert_eq!(violated(check_state(&s)), names::TIMERS);
    let mut s = base().s;
    s.cold.timers.insert(Timer::Timeout(cp(99)), ms(1));
    assert_eq!(violated(check_state(&s)), names::TIMERS);
}

#[test]
fn invariant_one_completing_can_fail() {
    let mut h = base();
    h.step(0, ack(1, 1, 101));
    let mut s = h.s.clone();
    s.set_completing(None);
    assert_eq!(violated(check_state(&s)), names::ONE_COMPLETING);
    let mut s = h.s;
    s.set_completing(Some(cp(5)));
    assert_eq!(violated(check_state(&s)), names::ONE_COMPLETING);
}

#[test]
fn invariant_completed_retained_ordered_can_fail() {
    let mut s = base().s;
    for id in [1, 2, 3] {
        s.cold.completed.push_back(fake_completed(id, false));
    }
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
    let mut s = base().s;
    s.cold.completed.push_back(fake_completed(5, false));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
    // The same id twice is out of order too (each id completes once), even
    // where every other bound holds.
    let mut s = base().s;
    s.cold.last_id = Some(cp(4));
    s.cold.latest_completed = Some(cp(4));
    s.pending = PendingMap::default();
    s.cold.timers.remove(&Timer::Timeout(cp(1)));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(check_state(&s), Ok(()));
    s.cold.completed.push_back(fake_completed(4, false));
    assert_eq!(violated(check_state(&s)), names::COMPLETED);
}

#[test]
fn invariant_recent_ids_bounded_can_fail() {
    let mut s = base().s;
    for id in 100..117 {
        s.cold.recent.push_back(cp(id));
    }
    assert_eq!(violated(check_state(&s)), names::RECENT);
}

#[test]
fn invariant_shutdown_quiet_can_fail() {
    let mut s = base().s;
    s.shutdown = true;
    assert_eq!(violated(check_state(&s)), names::SHUTDOWN_QUIET);
}

#[test]
fn invariant_nothing_after_shutdown_can_fail() {
    let mut h = H::new();
    h.step(
        0,
        Ev::Shutdown {
            status: JobStatus::Finished,
        },
    );
    let s = h.s;
    let step = fake_step(
        vec![sched(Timer::Periodic, 5)],
        applied(Applied::SchedulerStarted),
    );
    assert_eq!(
        violated(check_step(&s, &Ev::StartScheduler, &step, &s)),
        names::NOTHING_AFTER_SHUTDOWN
    );
}

#[test]
fn invariant_refused_event_changes_nothing_can_fail() {
    let before = base().s;
    let mut after = before.clone();
    after.periodic = true;
    let rejected = fake_step(
        vec![],
        Outcome::Rejected(CoordinatorError::NoCheckpointToRestore),
    );
    assert_eq!(
        violated(check_step(&before, &Ev::StartScheduler, &rejected, &after)),
        names::REFUSED_UNCHANGED
    );
    let noisy = fake_step(
        vec![cancel(Timer::Periodic)],
        ignored(Ignored::TimerNotArmed),
    );
    assert_eq!(
        violated(check_step(&before, &Ev::StartScheduler, &noisy, &before)),
        names::REFUSED_UNCHANGED
    );
}

#[test]
fn invariant_complete_only_with_all_acks_can_fail() {
    let s = base().s; // checkpoint 1 misses task 1's ack
    let step = fake_step(
        vec![e_completed(1, 0, false)],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(
        violated(check_step(&s, &store(1, true), &step, &s)),
        names::COMPLETE_ALL_ACKS
    );
    let step = fake_step(
        vec![e_completed(9, 0, false)],
        applied(Applied::Completed { checkpoint: cp(9) }),
    );
    assert_eq!(
        violated(check_step(&s, &store(9, true), &step, &s)),
        names::COMPLETE_ALL_ACKS
    );
}

#[test]
fn invariant_completed_ids_increase_can_fail() {
    let mut h = base();
    h.step(0, ack(1, 1, 101));
    let mut before = h.s;
    before.cold.completed.push_back(fake_completed(5, false));
    let step = fake_step(
        vec![e_completed(1, 0, false)],
        applied(Applied::Completed { checkpoint: cp(1) }),
    );
    assert_eq!(
        violated(check_step(&before, &store(1, true), &step, &before)),
        names::COMPLETED_INCREASE
    );
    // The same id completing again is not an increase either.
    let mut again = before.clone();
    again.cold.completed = Default::default();
    again.cold.completed.push_back(fake_completed(1, false));
    assert_eq!(
        violated(check_step(&again, &store(1, true), &step, &again)),
        names::COMPLETED_INCREASE
    );
}

#[test]
fn invariant_discard_once_owes_one_discard_per_debt_not_per_delivery() {
    // A handle delivered twice while owed (a duplicate ack, state two
    // checkpoints share) is one debt: one discard settles it, a second is
    // a discard of something not owed.
    let s = base().s;
    let mut ledger = HandleLedger::new();
    let delivered = fake_step(
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    for _ in 0..2 {
        // Not retained by `s`: each observation reports the debt as a leak,
        // and the ledger keeps it.
        let _ = ledger.observe(&ack(1, 1, 77), &delivered, &s);
    }
    let discarded = |n: usize| {
        fake_step(
            vec![e_discard(1, 77); n],
            ignored(Ignored::CheckpointDiscarded),
        )
    };
    let mut once = ledger.clone();
    assert_eq!(once.observe(&Ev::StopScheduler, &discarded(1), &s), Ok(()));
    assert_eq!(once.owed(), 0);
    assert_eq!(
        violated(ledger.observe(&Ev::StopScheduler, &discarded(2), &s)),
        names::DISCARD_ONCE
    );
    // Delivered again after its discard, it is owed again.
    let _ = once.observe(&ack(1, 1, 77), &delivered, &s);
    assert_eq!(once.observe(&Ev::StopScheduler, &discarded(1), &s), Ok(()));
}

#[test]
fn invariant_no_discard_of_retained_state_can_fail() {
    let s = base().s; // checkpoint 1 holds handle 100
    let step = fake_step(
        vec![e_discard(1, 100)],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    assert_eq!(
        violated(check_step(&s, &ack(1, 1, 101), &step, &s)),
        names::NO_DISCARD_RETAINED
    );
}

#[test]
fn invariant_handle_retained_or_discarded_can_fail() {
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    // The ack was "applied" but its handle is neither held nor discarded.
    let step = fake_step(
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    assert_eq!(
        violated(ledger.observe(&ack(0, 1, 100), &step, &s)),
        names::NO_LEAK
    );
}

/// The checked step's ledger looks only at what a step changed
/// (`observe_step`); each way a state can lose an owed handle is still
/// caught, with the verdict of the full check (`observe`).
#[test]
fn invariant_handle_retained_or_discarded_can_fail_when_checked_by_what_changed() {
    let h = base(); // checkpoint 1 pending, its slot 0 holding handle 100
    assert_eq!(h.ledger.owed(), 1);
    let acked = fake_step(
        vec![],
        applied(Applied::Acknowledged {
            checkpoint: cp(1),
            remaining: 1,
        }),
    );
    let both = |before: &CoordinatorState, ev: &Ev, step: &Step, after: &CoordinatorState| {
        let full = h.ledger.clone().observe(ev, step, after);
        let by_change = h.ledger.clone().observe_step(before, ev, step, after);
        assert_eq!(full, by_change, "observe and observe_step disagree");
        by_change
    };
    let ev = Ev::StopScheduler;
    // Nothing changed: nothing to look at, and nothing lost.
    assert_eq!(both(&h.s, &ev, &acked, &h.s), Ok(()));
    // The pending checkpoint vanished without a discard.
    let mut gone = h.s.clone();
    gone.pending.remove(&cp(1));
    assert_eq!(violated(both(&h.s, &ev, &acked, &gone)), names::NO_LEAK);
    // Its slot now holds another handle.
    let mut swapped = h.s.clone();
    if let Some(p) = swapped.pending.get_mut(&cp(1)) {
        p.acks.set(0, AckSlot::Acked(Some(StateHandle(101))));
    }
    assert_eq!(violated(both(&h.s, &ev, &acked, &swapped)), names::NO_LEAK);
    // Its slot was emptied.
    let mut emptied = h.s.clone();
    if let Some(p) = emptied.pending.get_mut(&cp(1)) {
        p.acks.set(0, AckSlot::Waiting);
    }
    assert_eq!(violated(both(&h.s, &ev, &acked, &emptied)), names::NO_LEAK);
    // Another slot gained a handle: 100 is still held.
    let mut gained = h.s.clone();
    if let Some(p) = gained.pending.get_mut(&cp(1)) {
        p.acks.set(1, AckSlot::Acked(Some(StateHandle(101))));
    }
    assert_eq!(both(&h.s, &ev, &acked, &gained), Ok(()));
    // A fresh handle the step took but nothing holds, the state otherwise
    // as it was.
    assert_eq!(
        violated(both(&h.s, &ack(1, 1, 555), &acked, &h.s)),
        names::NO_LEAK
    );
    // ... held: fine; taken and discarded in the same step: fine.
    assert_eq!(both(&h.s, &ack(1, 1, 101), &acked, &gained), Ok(()));
    let settled = fake_step(vec![e_discard(1, 555)], ignored(Ignored::LateMessage));
    assert_eq!(both(&h.s, &ack(1, 1, 555), &settled, &h.s), Ok(()));
    // The state provably keeps every handle (it is the same state), and the
    // step discards its one owed handle twice: a duplicate discard is
    // caught whatever the state holds.
    assert!(h.s.keeps_holdings_of(&h.s));
    let twice = fake_step(
        vec![e_discard(1, 100), e_discard(1, 100)],
        ignored(Ignored::LateMessage),
    );
    assert_eq!(violated(both(&h.s, &ev, &twice, &h.s)), names::DISCARD_ONCE);
    // The shortcut's premise is "`before` holds every owed handle": in
    // every case above where it was broken by the step (a handle gone from
    // `after`), it did not apply.
    assert!(!gone.keeps_holdings_of(&h.s));
    assert!(!swapped.keeps_holdings_of(&h.s));
    assert!(!emptied.keeps_holdings_of(&h.s));
    assert!(gained.keeps_holdings_of(&h.s));
    // A retained checkpoint's handles dropped with the retained list.
    let mut c = H::with(CoordinatorSettings {
        retained_max: 2,
        ..settings()
    });
    c.user_cp(0, 1);
    c.complete(0, 1);
    assert_eq!(c.ledger.owed(), 2);
    let mut dropped = c.s.clone();
    dropped.cold.completed = Default::default();
    let ledger = c.ledger.clone();
    assert_eq!(
        violated(ledger.clone().observe_step(&c.s, &ev, &acked, &dropped)),
        names::NO_LEAK
    );
    assert_eq!(
        violated(ledger.clone().observe(&ev, &acked, &dropped)),
        names::NO_LEAK
    );
    // ... or with the in-doubt checkpoint.
    let mut doubt = c.s.clone();
    let newest = doubt.cold.completed.len().saturating_sub(1);
    doubt.cold.in_doubt = doubt.cold.completed.remove(newest);
    assert!(doubt.cold.in_doubt.is_some());
    let mut lost = doubt.clone();
    lost.cold.in_doubt = None;
    let mut l = c.ledger.clone();
    assert_eq!(l.observe_step(&c.s, &ev, &acked, &doubt), Ok(()));
    assert_eq!(
        violated(l.observe_step(&doubt, &ev, &acked, &lost)),
        names::NO_LEAK
    );
}

#[test]
fn invariant_discard_at_most_once_per_delivery_can_fail() {
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    let step = fake_step(
        vec![e_discard(42, 4_200), e_discard(42, 4_200)],
        ignored(Ignored::UnknownCheckpoint),
    );
    assert_eq!(
        violated(ledger.observe(&ack(0, 42, 4_200), &step, &s)),
        names::DISCARD_ONCE
    );
}

#[test]
fn ledger_forgets_finished_handles_and_still_catches_a_second_discard() {
    let mut h = H::new();
    let mut most = 0usize;
    for id in 1..=300u64 {
        h.user_cp(id * 10, id);
        h.complete(id * 10, id);
        most = most.max(h.ledger.owed());
    }
    // Only the handles of the retained checkpoint are owed, however long
    // the history (retained_max is 1 in these settings).
    let tasks = h.s.config().tasks_to_wait().len();
    assert!(most <= 2 * tasks, "{most} handles owed at most");
    assert_eq!(h.ledger.owed(), tasks);
    assert_eq!(h.ledger.discarded(), 299 * tasks as u64);
    // Handle 100 (checkpoint 1, task 0) was discarded long ago and is
    // forgotten; discarding it again is still one discard too many.
    let step = fake_step(vec![e_discard(1, 100)], ignored(Ignored::LateMessage));
    assert_eq!(
        violated(h.ledger.observe(&Ev::StartScheduler, &step, &h.s)),
        names::DISCARD_ONCE
    );
}

#[test]
fn ledger_absorbs_a_duplicate_ack_but_requires_its_handle_held() {
    let mut h = base();
    // The same ack again: ignored as a duplicate, handle 100 still held.
    h.expect(2, ack(0, 1, 100), vec![], ignored(Ignored::DuplicateAck));
    assert_eq!(h.ledger.owed(), 1, "one debt for two deliveries");
    // A reducer that ignored a handle it does not hold, without discarding.
    let s = H::new().s;
    let mut ledger = HandleLedger::new();
    let step = fake_step(vec![], ignored(Ignored::DuplicateAck));
    assert_eq!(
        violated(ledger.observe(&ack(0, 1, 100), &step, &s)),
        names::NO_LEAK
    );
}

#[test]
fn new_attempt_without_failure_report_aborts_checkpoints_waiting_for_the_old_one() {
    let mut h = H::new();
    let r = h.user_cp(0, 1);
    h.step(1, ack(0, 1, 100));
    // Task 1 restarts as attempt 1 without a TaskFailed for attempt 0: the old
    // attempt can never ack, so checkpoint 1 is aborted now (not at expiry),
    // and the dead attempt is not notified.
    h.expect(
        2,
        running(1, 1),
        vec![
            cancel(Timer::Timeout(cp(1))),
            e_discard(1, 100),
            e_aborted(1, r, AbortReason::TaskFailed),
            h.nab(0, 1, None),
        ],
        applied(Applied::TaskUpdated { aborted: 1 }),
    );
    assert_eq!(
        h.s.task_status(t(1)),
        Some(TaskStatus {
            attempt: AttemptNo(1),
            running: true,
            finished: false,
        })
    );
    // A late ack from the old attempt of checkpoint 1 is a late message whose
    // state is discarded.
    h.expect(
        3,
        ack_at(1, 0, 1, Some(101)),
        vec![e_discard(1, 101)],
        Outcome::Ignored(Ignored::LateMessage),
    );
}
