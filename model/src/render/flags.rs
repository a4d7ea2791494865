//! A configuration as the command line spells it: banners, reports, the
//! Explorer command printed under a counterexample and the zoo's table all
//! name a world by the flags that select it.

use crate::world::{semantics_name, ModelConfig, Network, Topology};

/// The CLI spelling of a topology.
#[must_use]
pub fn topology_name(t: Topology) -> &'static str {
    match t {
        Topology::Fanout => "fanout",
        Topology::Join => "join",
    }
}

/// The CLI spelling of a network.
#[must_use]
pub fn network_name(n: Network) -> &'static str {
    match n {
        Network::Ordered => "ordered",
        Network::Reorder => "reorder",
        Network::ReorderDupDrop => "reorder-dup-drop",
    }
}

/// The configuration as the command-line flags that select it (every
/// bound, switches only when set).
#[must_use]
pub fn flags(c: &ModelConfig) -> String {
    let mut f = format!(
        "--semantics {} --tasks {} --topology {} --checkpoints {} --max-concurrent {} --network {} --faults {}",
        semantics_name(c.semantics),
        c.tasks,
        topology_name(c.topology),
        c.checkpoints,
        c.max_concurrent,
        network_name(c.network),
        c.faults
    );
    for (off, flag) in [
        (!c.io_faults, " --no-io-faults"),
        (!c.task_faults, " --no-task-faults"),
        (!c.shutdown, " --no-shutdown"),
    ] {
        if off {
            f.push_str(flag);
        }
    }
    for (n, flag) in [
        (c.savepoints, "--savepoints"),
        (c.task_failures, "--task-failures"),
        (c.scheduler_restarts, "--scheduler-restarts"),
        (c.user_checkpoints, "--user-checkpoints"),
        (
            u8::try_from(c.master_hooks).unwrap_or(u8::MAX),
            "--master-hooks",
        ),
        (c.coordinator_failovers, "--coordinator-failovers"),
        (c.job_failovers, "--job-failovers"),
        (c.end_of_input, "--end-of-input"),
        (c.zombie_coordinators, "--zombie-coordinators"),
        (c.finished_tasks, "--finished-tasks"),
        (c.recovering_tasks, "--recovering-tasks"),
    ] {
        if n > 0 {
            f.push_str(&format!(" {flag} {n}"));
        }
    }
    for (on, flag) in [
        (c.savepoint_restore, " --savepoint-restore"),
        (c.shared_state, " --shared-state"),
        (c.dispose_savepoints, " --dispose-savepoints"),
        (c.stop_with_savepoint, " --stop-with-savepoint"),
        (c.shared_files, " --shared-files"),
        (
            !c.checkpoints_after_finish,
            " --no-checkpoints-after-finish",
        ),
    ] {
        if on {
            f.push_str(flag);
        }
    }
    f
}

/// The flags in which `c` differs from the default configuration (its
/// semantics aside): the world a zoo entry needs, or `(default)`.
#[must_use]
pub fn world_flags(c: &ModelConfig) -> String {
    let default = ModelConfig {
        semantics: c.semantics,
        ..ModelConfig::default()
    };
    // Each flag with its value, as one item.
    let pairs = |f: String| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for tok in f.split_whitespace() {
            match out.last_mut() {
                Some(last) if !tok.starts_with("--") => {
                    last.push(' ');
                    last.push_str(tok);
                }
                Some(_) | None => out.push(tok.to_string()),
            }
        }
        out
    };
    let base = pairs(flags(&default));
    let diff: Vec<String> = pairs(flags(c))
        .into_iter()
        .filter(|p| !base.contains(p))
        .collect();
    if diff.is_empty() {
        "(default)".into()
    } else {
        diff.join(" ")
    }
}

/// `n` and the noun, singular or plural.
#[must_use]
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}
