//! The async host's small public pieces: when a fault plan counts as active,
//! the seeded fault generator (SplitMix64) against its published reference
//! values, and what `verify_output` reports about incomplete output.
#![cfg(not(loom))]

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::pipeline::{verify_output, OutputError, TwoPhaseSink};
use ckpt_core::host::runtime::{FaultPlan, Operator, Record, SplitMix64};
use ckpt_core::{CheckpointId, TaskId};

#[test]
fn fault_plan_with_neither_drops_nor_delays_is_inactive() {
    assert!(!FaultPlan::default().is_active());
    let seeded_only = FaultPlan {
        drop_ppm: 0,
        delay_max_ms: 0,
        seed: 12_345,
    };
    assert!(!seeded_only.is_active(), "a seed alone configures no fault");
}

#[test]
fn fault_plan_with_only_drops_is_active() {
    for drop_ppm in [1, 500_000, 1_000_000, u32::MAX] {
        let plan = FaultPlan {
            drop_ppm,
            delay_max_ms: 0,
            seed: 0,
        };
        assert!(
            plan.is_active(),
            "drop_ppm {drop_ppm} must activate the plan"
        );
    }
}

#[test]
fn fault_plan_with_only_delays_is_active() {
    for delay_max_ms in [1, 50, u64::MAX] {
        let plan = FaultPlan {
            drop_ppm: 0,
            delay_max_ms,
            seed: 0,
        };
        assert!(
            plan.is_active(),
            "delay_max_ms {delay_max_ms} must activate the plan"
        );
    }
}

#[test]
fn splitmix64_matches_the_reference_sequence_for_seed_zero() {
    let mut g = SplitMix64::new(0);
    let got = [g.next_u64(), g.next_u64(), g.next_u64()];
    assert_eq!(
        got,
        [
            0xE220_A839_7B1D_CDAF,
            0x6E78_9E6A_A1B9_65F4,
            0x06C4_5D18_8009_454F
        ],
        "SplitMix64(0) must produce the published reference values"
    );
}

#[test]
fn splitmix64_is_deterministic_per_seed_and_bounds_below_or_eq() {
    let mut a = SplitMix64::new(0xDEAD_BEEF);
    let mut b = SplitMix64::new(0xDEAD_BEEF);
    for _ in 0..64 {
        assert_eq!(a.next_u64(), b.next_u64());
    }
    let mut g = SplitMix64::new(7);
    for max in [0, 1, 9, 999_999] {
        for _ in 0..32 {
            assert!(g.below_or_eq(max) <= max);
        }
    }
}

/// Commits `records` (in one transaction of checkpoint 1) through the
/// two-phase sink, the way the pipeline does.
fn commit_through_sink(fs: &Arc<dyn Fs>, records: &[Record]) {
    let mut sink = TwoPhaseSink::new(TaskId(2), Arc::clone(fs), Arc::new(AtomicU64::new(0)));
    sink.restore(None, None).unwrap();
    let mut out = Vec::new();
    for r in records {
        sink.process(*r, &mut out).unwrap();
    }
    sink.snapshot(CheckpointId(1)).unwrap();
    sink.notify_complete(CheckpointId(1)).unwrap();
}

#[test]
fn verify_output_reports_how_many_records_a_complete_output_lacks() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    // Records 0 and 1 (one key each, count 1) of a source of 5.
    let records = [
        Record {
            id: 0,
            key: 0,
            value: 1,
        },
        Record {
            id: 1,
            key: 1,
            value: 1,
        },
    ];
    commit_through_sink(&fs, &records);

    // As a prefix the output is fine.
    let report = verify_output(&*fs, 5, false).unwrap();
    assert_eq!(report.records, 2);
    assert_eq!(report.transactions, 1);
    assert_eq!(report.pending, 0);

    // As a complete output, 3 of 5 are missing, the first being id 2.
    assert_eq!(
        verify_output(&*fs, 5, true),
        Err(OutputError::Missing {
            missing: 3,
            first: 2
        })
    );
    // All of 2 committed: complete.
    assert_eq!(verify_output(&*fs, 2, true).unwrap().records, 2);
}
