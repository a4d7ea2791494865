//! The exit statuses, defined once: every command returns one of these,
//! `--help` prints their summary, and `model/README.md`'s table is [`ExitStatus::table`]
//! (a test compares the two).

use ckpt_model::search::report::{CheckReport, Completion, Verdict};

/// What a command's exit status says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every property holds / the replay is clean.
    Ok,
    /// A property or invariant is violated (or, in `replay`, host misuse).
    Violated,
    /// Usage or input error, found before any search.
    Usage,
    /// No violation found, and no proof either: a bound cut the search, a
    /// legacy semantics did not reach its bug, a shard searched nothing.
    Inconclusive,
    /// A resource limit (`--max-states`, `--memory-limit-mb`) stopped the
    /// search: the report is partial.
    Limit,
    /// An interrupt (Ctrl-C, SIGTERM, SIGHUP) stopped the run: the report
    /// so far is printed.
    Interrupted,
    /// Stdout was closed by its reader (`| head`) or could not be written:
    /// the process ends at once, the report cut where the write failed
    /// (141, what a shell reports for a filter killed by SIGPIPE).
    OutputFailed,
}

impl ExitStatus {
    /// Every status, in the order of their codes.
    pub const ALL: [ExitStatus; 7] = [
        ExitStatus::Ok,
        ExitStatus::Violated,
        ExitStatus::Usage,
        ExitStatus::Inconclusive,
        ExitStatus::Limit,
        ExitStatus::Interrupted,
        ExitStatus::OutputFailed,
    ];

    /// The process's exit code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Violated => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Inconclusive => 3,
            ExitStatus::Limit => 4,
            ExitStatus::Interrupted => 130,
            ExitStatus::OutputFailed => 141,
        }
    }

    /// How much a status outweighs another when several runs make one
    /// (`check --semantics all`, `zoo`).
    fn rank(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Usage => 1,
            ExitStatus::Inconclusive => 2,
            ExitStatus::Limit => 3,
            ExitStatus::Violated => 4,
            ExitStatus::Interrupted => 5,
            ExitStatus::OutputFailed => 6,
        }
    }

    /// The more severe of two statuses: output failed > interrupted > violated > resource
    /// limit > inconclusive > usage > ok.
    #[must_use]
    pub fn worse(self, other: ExitStatus) -> ExitStatus {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// The status of one check's report: an interrupt first, then a
    /// violation (definitive whatever stopped the search), then a resource
    /// limit, then inconclusive or holds.
    #[must_use]
    pub fn of_check(r: &CheckReport) -> ExitStatus {
        match (r.completion, r.verdict) {
            (Completion::Interrupted, _) => ExitStatus::Interrupted,
            (_, Verdict::Violated) => ExitStatus::Violated,
            (Completion::StateLimit | Completion::MemoryLimit, _) => ExitStatus::Limit,
            (_, Verdict::Inconclusive) => ExitStatus::Inconclusive,
            (_, Verdict::Holds) => ExitStatus::Ok,
        }
    }

    /// What the status means for `check` (and `merge`, `zoo`, `simulate`).
    fn check(self) -> &'static str {
        match self {
            ExitStatus::Ok => "every property holds over the whole bounded space",
            ExitStatus::Violated => "a property is violated (a counterexample is printed)",
            ExitStatus::Usage => {
                "usage error: bad flag, a combination that cannot ask its question (a `zoo \
                 --only` that selects no race), an output path that is a directory or cannot be \
                 written, a `zoo --check-traces` directory that is not one (checked before the \
                 search)"
            }
            ExitStatus::Inconclusive => {
                "inconclusive: `--time-limit` or `--max-depth` cut the search and nothing was \
                 violated, a legacy semantics found no violation (\"no violation found within \
                 the bound\" is not \"holds\"), or a shard owns no frontier state; `merge`: a \
                 shard missing or cut short"
            }
            ExitStatus::Limit => {
                "a resource limit (`--max-states`, `--memory-limit-mb`) stopped the search and \
                 nothing was violated: the counts and the properties so far are printed (a \
                 violation found before the stop is definitive: 1)"
            }
            ExitStatus::Interrupted => {
                "Ctrl-C, SIGTERM or SIGHUP: the counts, the properties and the verdict so far \
                 are printed (a second one exits at once)"
            }
            ExitStatus::OutputFailed => {
                "stdout was closed by its reader (a `head` that read enough) or could not be \
                 written: the run ends at once, its report cut where the write failed"
            }
        }
    }

    /// What the status means for `replay`.
    fn replay(self) -> &'static str {
        match self {
            ExitStatus::Ok => "every invariant holds, no host misuse",
            ExitStatus::Violated => {
                "an invariant is violated, or a step was refused as host misuse (`Rejected`) \
                 and `--allow-rejected` was not given"
            }
            ExitStatus::Usage => {
                "unreadable, malformed or truncated trace (a version-2 trace without its end \
                 line)"
            }
            ExitStatus::Interrupted => "the same: steps so far, inconclusive",
            ExitStatus::OutputFailed => "the same",
            ExitStatus::Inconclusive | ExitStatus::Limit => "",
        }
    }

    /// What the status means for `explore`.
    fn explore(self) -> &'static str {
        match self {
            ExitStatus::Usage => "usage error, port taken",
            _ => "",
        }
    }

    /// The table of every status, as `model/README.md` carries it (Markdown).
    #[must_use]
    pub fn table() -> String {
        let mut t = String::from("| exit | `check` | `replay` | `explore` |\n|---|---|---|---|\n");
        for s in ExitStatus::ALL {
            t.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                s.code(),
                s.check(),
                s.replay(),
                s.explore()
            ));
        }
        t
    }

    /// The one-paragraph summary `--help` ends with.
    #[must_use]
    pub fn help() -> String {
        let words = |s: ExitStatus| match s {
            ExitStatus::Ok => "holds / clean",
            ExitStatus::Violated => "violated (replay: also host misuse)",
            ExitStatus::Usage => "usage or input error",
            ExitStatus::Inconclusive => "inconclusive (a bound cut the search)",
            ExitStatus::Limit => "a resource limit (--max-states, --memory-limit-mb) stopped it",
            ExitStatus::Interrupted => "interrupted (Ctrl-C, SIGTERM, SIGHUP)",
            ExitStatus::OutputFailed => "stdout closed or unwritable",
        };
        let parts: Vec<String> = ExitStatus::ALL
            .iter()
            .map(|s| format!("{} {}", s.code(), words(*s)))
            .collect();
        format!("Exit status: {}.", parts.join(", "))
    }
}

/// Prints a usage error on stderr; its status.
pub fn usage_error(msg: &str) -> ExitStatus {
    eprintln!("error: {msg}");
    ExitStatus::Usage
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s.code())
    }
}

#[cfg(test)]
mod tests {
    use super::ExitStatus;

    #[test]
    fn the_readme_carries_the_exit_status_table_of_the_code() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .unwrap_or_else(|e| panic!("model/README.md: {e}"));
        let table = ExitStatus::table();
        assert!(
            readme.contains(&table),
            "model/README.md's exit status table differs from the code's; it should be:\n{table}"
        );
    }

    #[test]
    fn codes_are_distinct_and_severity_is_an_order() {
        let mut codes: Vec<u8> = ExitStatus::ALL.iter().map(|s| s.code()).collect();
        codes.dedup();
        assert_eq!(codes.len(), ExitStatus::ALL.len());
        for a in ExitStatus::ALL {
            for b in ExitStatus::ALL {
                assert_eq!(a.worse(b), b.worse(a));
                assert!(a.worse(b) == a || a.worse(b) == b);
            }
        }
        assert_eq!(
            ExitStatus::Violated.worse(ExitStatus::Interrupted),
            ExitStatus::Interrupted
        );
    }
}
