//! Conformance with Flink's own `CheckpointCoordinator`, decision by
//! decision.
//!
//! A seeded generator ([`gen`]) makes sequences of events; each goes through
//! ckpt's coordinator ([`ckpt_side`]) and through Flink's real coordinator
//! in a harness JVM ([`flink_side`], `tests/flink/`), one event at a time.
//! After every event both sides' decisions are normalized into one record
//! ([`decision`]) and compared ([`compare`]); every difference is either a
//! named entry of the [`catalog`] or a divergence, which fails the run and
//! is shrunk ([`shrink`]) to its shortest sequence, printed with both
//! sides' decisions and written as a JSON file a regression test replays
//! without a JVM ([`Replay`]).
//!
//! The binary is `ckpt-conformance` (`tests/flink/README.md`).

pub mod catalog;
pub mod ckpt_side;
pub mod compare;
pub mod decision;
pub mod event;
pub mod flink_side;
pub mod gen;
pub mod profile;
pub mod shrink;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use compare::{run_sequence, Divergence, Recorded, RunError, SeqResult};
use event::Sequence;
use flink_side::{FlinkError, Jvm};
use profile::{FlinkProfile, Version};

/// A regression file: a shrunk sequence, the version, and Flink's recorded
/// responses, replayable without a JVM ([`Replay::replay`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Replay {
    /// The Flink version (`1.11`, `1.20`, `2.3`).
    pub version: String,
    /// The sequence (its seed reruns the unshrunk original alone).
    pub sequence: Sequence,
    /// What the comparator found: the divergence's signature
    /// ([`Divergence::signature`]) when the file was written. Empty in a
    /// hand-written file meant for [`Replay::rerun`].
    #[serde(default)]
    pub expect: String,
    /// The divergence, both sides' decisions included.
    #[serde(default)]
    pub divergence: Option<Divergence>,
    /// Flink's response lines, `begin` first (none in a hand-written file
    /// meant for [`Replay::rerun`]).
    #[serde(default)]
    pub flink: Vec<Value>,
}

impl Replay {
    /// The version this file is for.
    pub fn profile(&self) -> Result<FlinkProfile, String> {
        Version::parse(&self.version)
            .map(FlinkProfile::of)
            .ok_or_else(|| format!("unknown version {}", self.version))
    }

    /// Replays ckpt against the recorded Flink lines and returns the
    /// comparison (what it finds today, with the catalog as it is today).
    pub fn replay(&self, allow: &[String]) -> Result<SeqResult, String> {
        let profile = self.profile()?;
        let mut src = Recorded::new(self.flink.clone());
        run_sequence(&mut src, &profile, &self.sequence, allow).map_err(|e| e.to_string())
    }
}

impl Replay {
    /// Runs this file's sequence against the live harness of its version
    /// (one JVM from `harness_dir`, its log at `log`) and returns a fresh
    /// file holding today's Flink responses, whose `expect` is what the
    /// comparator finds now: the divergence's signature, `choice:NAME` for
    /// the named choice after which it stopped comparing, or `agree`. How a
    /// hand-written sequence (a file with only `version` and `sequence`)
    /// becomes a regression file, and how a recorded one is checked
    /// against a new build of the harness.
    pub fn rerun(
        &self,
        harness_dir: &Path,
        log: &Path,
        allow: &[String],
    ) -> Result<(Replay, SeqResult), String> {
        let profile = self.profile()?;
        let mut jvm = Jvm::spawn(harness_dir, profile.version, log).map_err(|e| e.to_string())?;
        let r =
            run_sequence(&mut jvm, &profile, &self.sequence, allow).map_err(|e| e.to_string())?;
        let expect = match (&r.divergence, r.stopped_by) {
            (Some(d), _) => d.signature(),
            (None, Some(name)) => format!("choice:{name}"),
            (None, None) => "agree".to_owned(),
        };
        let fresh = Replay {
            version: self.version.clone(),
            sequence: self.sequence.clone(),
            expect,
            divergence: r.divergence.clone(),
            flink: r.lines.clone(),
        };
        Ok((fresh, r))
    }
}

/// Events per sequence when `--events-per-sequence` is not given.
pub const DEFAULT_EVENTS_PER_SEQUENCE: usize = 20;

/// How a run is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// The run's seed; sequence `i` is generated from `seed + i`.
    pub seed: u64,
    /// Sequences per version.
    pub sequences: u64,
    /// Events per sequence (fewer when a shutdown ends it early).
    pub events: usize,
    /// The versions compared against.
    pub versions: Vec<Version>,
    /// Versions run at once (each in its own JVM).
    pub jobs: usize,
    /// Gaps counted like choices instead of failing the run.
    pub allow: Vec<String>,
    /// Where regression files and JVM logs go.
    pub out_dir: PathBuf,
    /// `tests/flink` (run.sh).
    pub harness_dir: PathBuf,
    /// Shrink and write at most this many distinct divergences per version.
    pub max_reports: usize,
    /// Draw the progress line.
    pub progress: bool,
    /// Event kinds drawn beyond the default ones (`--finished-tasks`).
    pub draws: gen::Draws,
}

/// What a distinct divergence became.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its signature.
    pub signature: String,
    /// Sequences that showed it.
    pub count: u64,
    /// The first seed that showed it.
    pub seed: u64,
    /// The `ckpt-conformance` flags that run that seed's sequence alone
    /// again ([`rerun_flags`]).
    pub rerun: String,
    /// The regression file written (`None` beyond `--max-reports`: not shrunk).
    pub file: Option<PathBuf>,
    /// The divergence (shrunk when a file was written).
    pub divergence: Divergence,
    /// The sequence (shrunk when a file was written).
    pub sequence: Sequence,
}

/// One version's figures.
#[derive(Clone, Debug)]
pub struct VersionReport {
    /// The version.
    pub version: Version,
    /// Sequences run.
    pub sequences: u64,
    /// Events generated (the ends included).
    pub generated: u64,
    /// Events compared (a sequence is not compared after a divergence or
    /// an entry that leaves the states apart).
    pub compared: u64,
    /// Per catalog entry: events it explained, sequences it stopped.
    pub names: BTreeMap<&'static str, (u64, u64)>,
    /// Sequences compared to the end.
    pub complete: u64,
    /// Divergences by signature.
    pub found: BTreeMap<String, Found>,
    /// Wall time.
    pub elapsed: Duration,
}

impl VersionReport {
    fn new(version: Version) -> VersionReport {
        VersionReport {
            version,
            sequences: 0,
            generated: 0,
            compared: 0,
            names: BTreeMap::new(),
            complete: 0,
            found: BTreeMap::new(),
            elapsed: Duration::ZERO,
        }
    }

    /// Sequences with an unexplained divergence (or a gap not allowed).
    pub fn unexplained(&self) -> u64 {
        self.found.values().map(|f| f.count).sum()
    }

    /// Compared events per second of wall time.
    pub fn events_per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.compared as f64 / s
        } else {
            0.0
        }
    }

    /// Whether the run passes for this version: something was compared and
    /// nothing diverged unexplained.
    pub fn passed(&self) -> bool {
        self.compared > 0 && self.found.is_empty()
    }
}

/// Why a version's run could not go on.
#[derive(Debug)]
pub struct Fatal {
    /// The version.
    pub version: Version,
    /// The sequence's seed, if one was running.
    pub seed: Option<u64>,
    /// What happened.
    pub error: String,
}

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seed {
            Some(s) => write!(
                f,
                "Flink {}: sequence seed {s}: {}",
                self.version, self.error
            ),
            None => write!(f, "Flink {}: {}", self.version, self.error),
        }
    }
}

/// The `ckpt-conformance` flags that generate and compare the sequence of
/// `seed` alone again against `version`: `--seed seed --sequences 1
/// --versions V`, plus the flags of `opts` that are not the defaults and
/// change the sequence (`--events-per-sequence`, `--finished-tasks`: a
/// sequence comes back the same only with the same values) or what fails
/// (`--allow`).
pub fn rerun_flags(version: Version, seed: u64, opts: &Options) -> String {
    let mut s = format!("--seed {seed} --sequences 1 --versions {}", version.short());
    if opts.events != DEFAULT_EVENTS_PER_SEQUENCE {
        s.push_str(&format!(" --events-per-sequence {}", opts.events));
    }
    if opts.draws.finishes {
        s.push_str(" --finished-tasks");
    }
    for a in &opts.allow {
        s.push_str(&format!(" --allow {a}"));
    }
    s
}

/// A file-name-safe form of a signature (`choice:a-b.c` -> `choice-a-b-c`).
pub fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    out.truncate(60);
    out
}

/// Runs one version: spawns its JVM, generates and compares
/// `opts.sequences` sequences, shrinks and writes each distinct divergence.
/// `tick` is called after every sequence with the report so far.
pub fn run_version(
    version: Version,
    opts: &Options,
    tick: &mut dyn FnMut(&VersionReport),
) -> Result<VersionReport, Fatal> {
    let profile = FlinkProfile::of(version);
    let fatal = |seed, error: String| Fatal {
        version,
        seed,
        error,
    };
    let log = opts.out_dir.join(format!("flink-{}.log", version.short()));
    let mut jvm =
        Jvm::spawn(&opts.harness_dir, version, &log).map_err(|e| fatal(None, e.to_string()))?;
    let mut report = VersionReport::new(version);
    let started = Instant::now();
    for index in 0..opts.sequences {
        let seq = gen::sequence_with(&profile, opts.seed, index, opts.events, opts.draws).map_err(
            |e| {
                fatal(
                    Some(opts.seed.wrapping_add(index)),
                    format!("generator: {e}"),
                )
            },
        )?;
        let r = run_sequence(&mut jvm, &profile, &seq, &opts.allow)
            .map_err(|e| fatal(Some(seq.seed), e.to_string()))?;
        report.sequences += 1;
        report.generated += seq.events.len() as u64 + 1;
        report.compared += r.compared as u64;
        for n in &r.names {
            report.names.entry(n).or_default().0 += 1;
        }
        if let Some(stop) = r.stopped_by {
            report.names.entry(stop).or_default().1 += 1;
        }
        match r.divergence {
            None if r.stopped_by.is_none() => report.complete += 1,
            None => {}
            Some(d) => {
                let signature = d.signature();
                if let Some(f) = report.found.get_mut(&signature) {
                    f.count += 1;
                } else if report.found.len() < opts.max_reports {
                    let found = shrink_and_write(&mut jvm, &profile, &seq, &d, opts)
                        .map_err(|e| fatal(Some(seq.seed), e.to_string()))?;
                    report.found.insert(signature, found);
                } else {
                    report.found.insert(
                        signature.clone(),
                        Found {
                            signature,
                            count: 1,
                            seed: seq.seed,
                            rerun: rerun_flags(version, seq.seed, opts),
                            file: None,
                            divergence: d,
                            sequence: seq.clone(),
                        },
                    );
                }
            }
        }
        report.elapsed = started.elapsed();
        tick(&report);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

fn shrink_and_write(
    jvm: &mut Jvm,
    profile: &FlinkProfile,
    seq: &Sequence,
    d: &Divergence,
    opts: &Options,
) -> Result<Found, RunError> {
    let (shrunk, r) = shrink::shrink(jvm, profile, seq, d, &opts.allow)?;
    let divergence = r.divergence.clone().unwrap_or_else(|| d.clone());
    let replay = Replay {
        version: profile.version.short().to_owned(),
        sequence: shrunk.clone(),
        expect: divergence.signature(),
        divergence: Some(divergence.clone()),
        flink: r.lines,
    };
    let file = opts.out_dir.join(format!(
        "divergence-{}-{}-seed{}.json",
        profile.version.short(),
        slug(&divergence.signature()),
        seq.seed
    ));
    let text = serde_json::to_string_pretty(&replay)
        .map_err(|e| RunError::Flink(FlinkError::Malformed(e.to_string())))?;
    std::fs::create_dir_all(&opts.out_dir)
        .and_then(|()| std::fs::write(&file, text))
        .map_err(|e| RunError::Flink(FlinkError::Malformed(format!("{}: {e}", file.display()))))?;
    Ok(Found {
        signature: divergence.signature(),
        count: 1,
        seed: seq.seed,
        rerun: rerun_flags(profile.version, seq.seed, opts),
        file: Some(file),
        divergence,
        sequence: shrunk,
    })
}

/// Prints a divergence the way a person reads it: the shrunk sequence,
/// then both sides' decisions for the diverging event.
pub fn describe(f: &Found) -> String {
    let d = &f.divergence;
    let mut s = String::new();
    let what = match &d.gap {
        Some(g) => format!("known gap '{g}' (not allowed)"),
        None => "UNEXPLAINED divergence".to_owned(),
    };
    s.push_str(&format!(
        "{what} at event {} ({}), fields {:?}; {} sequence(s); first seed {} (rerun: {})\n",
        d.index, d.event, d.fields, f.count, f.seed, f.rerun
    ));
    if !d.explained.is_empty() {
        s.push_str(&format!(
            "  also recognized in that event: {:?}\n",
            d.explained
        ));
    }
    s.push_str(&format!(
        "  {} ({} events), config {}\n",
        if f.file.is_some() {
            "shortest sequence"
        } else {
            "sequence (not shrunk: --max-reports reached)"
        },
        f.sequence.events.len(),
        serde_json::to_string(&f.sequence.config).unwrap_or_default()
    ));
    for (i, e) in f.sequence.events.iter().enumerate() {
        s.push_str(&format!(
            "    {i:>3}: {}\n",
            serde_json::to_string(e).unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "  ckpt : {}\n  flink: {}\n  file : {}\n",
        serde_json::to_string(&d.ckpt).unwrap_or_default(),
        serde_json::to_string(&d.flink).unwrap_or_default(),
        f.file
            .as_ref()
            .map_or_else(|| "(none)".to_owned(), |p| p.display().to_string())
    ));
    s
}

/// The summary table of a run.
pub fn summary(reports: &[VersionReport]) -> String {
    let mut s = String::new();
    for r in reports {
        s.push_str(&format!(
            "Flink {:<5} sequences {:>7}  events generated {:>8}  compared {:>8}  complete sequences {:>7}  {:>7.0} events/s  unexplained {}\n",
            r.version.full(),
            r.sequences,
            r.generated,
            r.compared,
            r.complete,
            r.events_per_second(),
            r.unexplained()
        ));
        for e in catalog::CATALOG {
            if let Some((events, stopped)) = r.names.get(e.name) {
                let class = if e.is_gap() { "gap   " } else { "choice" };
                s.push_str(&format!(
                    "    {class} {:<36} events {:>7}  sequences stopped {:>6}\n",
                    e.name, events, stopped
                ));
            }
        }
        for (sig, f) in &r.found {
            let file = f
                .file
                .as_ref()
                .map_or_else(|| "not shrunk".to_owned(), |p| p.display().to_string());
            s.push_str(&format!(
                "    DIVERGENCE {sig}: {} sequence(s), {file}\n",
                f.count
            ));
        }
    }
    s
}

/// Whether the harness of `version` looks runnable (built, `run.sh` there).
pub fn harness_ready(harness_dir: &Path, version: Version) -> bool {
    harness_dir.join("run.sh").is_file() && flink_side::is_built(version)
}
