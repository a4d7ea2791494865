//! Configuration: validation and the getters.

use super::*;

// ============================================================================
// Configuration
// ============================================================================

#[test]
fn interval_must_be_positive() {
    assert_eq!(
        config_err(|s| s.interval_ms = 0),
        ConfigError::IntervalNotPositive(0)
    );
    assert_eq!(
        config_err(|s| s.interval_ms = -5),
        ConfigError::IntervalNotPositive(-5)
    );
    assert_eq!(config_ok(|s| s.interval_ms = 1).interval_ms(), 1);
}

#[test]
fn timeout_must_be_at_least_one_ms() {
    assert_eq!(
        config_err(|s| s.timeout_ms = 0),
        ConfigError::TimeoutNotPositive(0)
    );
    assert_eq!(config_ok(|s| s.timeout_ms = 1).timeout_ms(), 1);
}

#[test]
fn min_pause_must_not_be_negative() {
    assert_eq!(
        config_err(|s| s.min_pause_ms = -1),
        ConfigError::NegativeMinPause(-1)
    );
    assert_eq!(config_ok(|s| s.min_pause_ms = 0).min_pause_ms(), 0);
}

#[test]
fn min_pause_is_capped_at_one_year() {
    let c = config_ok(|s| s.min_pause_ms = i64::MAX);
    assert_eq!(c.min_pause_ms(), MIN_PAUSE_CAP_MS);
    assert_eq!(MIN_PAUSE_CAP_MS, 365 * 24 * 60 * 60 * 1_000);
}

#[test]
fn max_concurrent_must_be_at_least_one() {
    assert_eq!(
        config_err(|s| s.max_concurrent = 0),
        ConfigError::MaxConcurrentNotPositive(0)
    );
}

#[test]
fn interval_is_raised_to_min_pause() {
    let c = config_ok(|s| {
        s.interval_ms = 100;
        s.min_pause_ms = 700;
    });
    assert_eq!(c.interval_ms(), 700);
    // ... and to the capped pause, never above it.
    let c = config_ok(|s| {
        s.interval_ms = 100;
        s.min_pause_ms = i64::MAX;
    });
    assert_eq!(c.interval_ms(), MIN_PAUSE_CAP_MS);
}

#[test]
fn externalized_checkpoints_need_a_directory() {
    assert_eq!(
        config_err(|s| s.externalized = true),
        ConfigError::ExternalizedWithoutDirectory
    );
    let c = config_ok(|s| {
        s.externalized = true;
        s.checkpoint_dir = Some("/ext".into());
    });
    assert!(c.externalized());
    assert!(!config_ok(|s| s.externalized = false).externalized());
}

#[test]
fn tolerable_failures_must_not_be_negative() {
    assert_eq!(
        config_err(|s| s.tolerable_failures = -1),
        ConfigError::NegativeTolerableFailures(-1)
    );
    assert_eq!(
        config_ok(|s| s.tolerable_failures = 0).tolerable_failures(),
        0
    );
}

#[test]
fn retained_checkpoints_must_be_at_least_one() {
    assert_eq!(
        config_err(|s| s.retained_max = 0),
        ConfigError::RetainedNotPositive(0)
    );
}

#[test]
fn queue_bound_must_be_positive_and_is_capped() {
    assert_eq!(
        config_err(|s| s.queue_max = 0),
        ConfigError::QueueNotPositive(0)
    );
    assert_eq!(
        config_ok(|s| s.queue_max = i64::MAX).queue_max(),
        QUEUE_CAP as usize
    );
}

#[test]
fn task_lists_must_be_non_empty_unique_and_bounded() {
    assert_eq!(
        config_err(|s| s.tasks_to_trigger.clear()),
        ConfigError::NoTasks("tasks to trigger")
    );
    assert_eq!(
        config_err(|s| s.tasks_to_wait = vec![t(1), t(1)]),
        ConfigError::DuplicateTask {
            task: t(1),
            list: "tasks to wait for"
        }
    );
    assert_eq!(
        config_err(|s| s.tasks_to_commit = vec![t(TASK_ID_MAX)]),
        ConfigError::TaskIdTooLarge(t(TASK_ID_MAX))
    );
}

#[test]
fn config_is_validated_in_the_seeds_order() {
    // Everything is wrong: the interval is reported first, then the timeout...
    let all_wrong = |s: &mut CoordinatorSettings| {
        s.interval_ms = 0;
        s.timeout_ms = 0;
        s.min_pause_ms = -1;
        s.max_concurrent = 0;
        s.externalized = true;
    };
    assert_eq!(config_err(all_wrong), ConfigError::IntervalNotPositive(0));
    assert_eq!(
        config_err(|s| {
            all_wrong(s);
            s.interval_ms = 1;
        }),
        ConfigError::TimeoutNotPositive(0)
    );
    assert_eq!(
        config_err(|s| {
            all_wrong(s);
            s.interval_ms = 1;
            s.timeout_ms = 1;
            s.min_pause_ms = 0;
        }),
        ConfigError::MaxConcurrentNotPositive(0)
    );
}
