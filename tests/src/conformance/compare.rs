//! One sequence through both sides, compared after every event.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::{self, After, Entry};
use super::ckpt_side::{CkptSide, SideError, TaskView};
use super::decision::Decision;
use super::event::{Event, Sequence};
use super::flink_side::{self, FlinkError, Jvm};
use super::profile::FlinkProfile;

/// Where Flink's responses come from: a live JVM, or lines recorded from
/// one (tests and regression files replay those without a JVM).
pub trait FlinkSource {
    /// Sends one command and returns the response line.
    fn send(&mut self, cmd: &Value) -> Result<Value, FlinkError>;
    /// Ends a sequence left open after an error or an early stop.
    fn abandon(&mut self) -> Result<(), FlinkError>;
}

impl FlinkSource for Jvm {
    fn send(&mut self, cmd: &Value) -> Result<Value, FlinkError> {
        Jvm::send(self, cmd)
    }
    fn abandon(&mut self) -> Result<(), FlinkError> {
        Jvm::abandon(self)
    }
}

/// Responses recorded earlier, handed out in order (the commands are not
/// checked: the sequence that produced them is replayed as it was).
pub struct Recorded {
    lines: std::vec::IntoIter<Value>,
}

impl Recorded {
    /// Replays `lines` (the `begin` response first).
    pub fn new(lines: Vec<Value>) -> Recorded {
        Recorded {
            lines: lines.into_iter(),
        }
    }
}

impl FlinkSource for Recorded {
    fn send(&mut self, cmd: &Value) -> Result<Value, FlinkError> {
        self.lines
            .next()
            .ok_or_else(|| FlinkError::EndOfRecord(cmd.to_string()))
    }
    fn abandon(&mut self) -> Result<(), FlinkError> {
        Ok(())
    }
}

/// Why a sequence could not be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// ckpt's side could not take an event.
    Side(SideError),
    /// Flink's side failed or refused.
    Flink(FlinkError),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Side(e) => write!(f, "ckpt side: {e}"),
            RunError::Flink(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<SideError> for RunError {
    fn from(e: SideError) -> Self {
        RunError::Side(e)
    }
}

impl From<FlinkError> for RunError {
    fn from(e: FlinkError) -> Self {
        RunError::Flink(e)
    }
}

/// A divergence no documented choice explains (or a known gap).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The event's index (`events.len()`: the implicit end).
    pub index: usize,
    /// The event's kind.
    pub event: String,
    /// A known gap's name, or `None`: not recognized at all.
    pub gap: Option<String>,
    /// Named choices recognized in the same event before it.
    pub explained: Vec<String>,
    /// The fields that still differ.
    pub fields: Vec<String>,
    /// ckpt's decision, after the recognized choices were taken out.
    pub ckpt: Decision,
    /// Flink's decision, likewise.
    pub flink: Decision,
    /// ckpt's decision as the reducer made it, before any recognizer took
    /// a choice out (absent in files written before it was recorded).
    #[serde(default)]
    pub ckpt_decided: Option<Decision>,
    /// Flink's decision as the harness reported it, likewise.
    #[serde(default)]
    pub flink_decided: Option<Decision>,
}

impl Divergence {
    /// What identifies "the same" divergence while shrinking: a gap by its
    /// name, anything else by the event kind and the fields that differ.
    pub fn signature(&self) -> String {
        match &self.gap {
            Some(g) => format!("gap:{g}"),
            None => format!("{}:{}", self.event, self.fields.join(",")),
        }
    }
}

/// The outcome of one sequence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqResult {
    /// Events compared (the end included).
    pub compared: usize,
    /// Named entries recognized, one per event they explained.
    pub names: Vec<&'static str>,
    /// The entry after which the sequence was no longer compared.
    pub stopped_by: Option<&'static str>,
    /// The first divergence that is not a named choice (a gap not allowed,
    /// or nothing recognized); the sequence was not compared after it.
    pub divergence: Option<Divergence>,
    /// Every response line, `begin` first (for regression files).
    pub lines: Vec<Value>,
    /// The recorded source ran out before the sequence did (a regression
    /// file that ends at what used to be its divergence): every recorded
    /// response was compared.
    pub record_ended: bool,
}

/// The verdict on one event.
pub enum Verdict {
    /// Both decided the same (after the named choices were taken out).
    Agree(Vec<&'static Entry>),
    /// Not explained.
    Diverge(Box<Divergence>),
}

/// Masks that last beyond one event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Masks {
    /// The failure counter and fail-job are not compared until both
    /// counters agree again.
    pub counter: bool,
}

/// Compares one event's decisions through the catalog. `allow` names the
/// gaps counted like choices.
pub fn judge(
    ctx: &catalog::Ctx<'_>,
    ckpt: &Decision,
    flink: &Decision,
    masks: &mut Masks,
    allow: &[String],
) -> Verdict {
    let mut c = ckpt.clone();
    let mut f = flink.clone();
    if masks.counter {
        if c.state.failure_counter == f.state.failure_counter && c.fail_job == f.fail_job {
            masks.counter = false;
        } else {
            c.mask_counter();
            f.mask_counter();
        }
    }
    let mut hits: Vec<&'static Entry> = Vec::new();
    while c != f {
        let hit = catalog::CATALOG
            .iter()
            .find(|e| !hits.iter().any(|h| h.name == e.name) && (e.recognize)(ctx, &mut c, &mut f));
        let Some(entry) = hit else {
            return Verdict::Diverge(Box::new(divergence(ctx, None, &hits, [ckpt, flink], c, f)));
        };
        if entry.is_gap() && !allow.iter().any(|a| a == entry.name) {
            return Verdict::Diverge(Box::new(divergence(
                ctx,
                Some(entry.name),
                &hits,
                [ckpt, flink],
                c,
                f,
            )));
        }
        if entry.after == After::MaskCounter {
            masks.counter = true;
        }
        hits.push(entry);
    }
    Verdict::Agree(hits)
}

fn divergence(
    ctx: &catalog::Ctx<'_>,
    gap: Option<&str>,
    hits: &[&Entry],
    [decided_c, decided_f]: [&Decision; 2],
    c: Decision,
    f: Decision,
) -> Divergence {
    Divergence {
        index: ctx.index,
        event: ctx.event.map_or("end", Event::kind).to_owned(),
        gap: gap.map(str::to_owned),
        explained: hits.iter().map(|h| h.name.to_owned()).collect(),
        fields: c.diff_fields(&f).iter().map(|s| (*s).to_owned()).collect(),
        ckpt: c,
        flink: f,
        ckpt_decided: Some(decided_c.clone()),
        flink_decided: Some(decided_f.clone()),
    }
}

/// ckpt's decisions for every event of `seq` and the end (the first one is
/// the state before any event), each with ckpt's tasks after it.
pub fn ckpt_decisions(profile: &FlinkProfile, seq: &Sequence) -> Result<Vec<CkptStep>, SideError> {
    let mut side = CkptSide::new(*profile, &seq.config)?;
    let step = |side: &CkptSide, decision| CkptStep {
        decision,
        tasks: side.tasks(),
        stopping: side.is_stopping(),
        job_finished: side.is_job_finished(),
    };
    let mut out = vec![step(&side, side.snapshot())];
    for e in &seq.events {
        let d = side.apply(e)?;
        out.push(step(&side, d));
    }
    let d = side.end()?;
    out.push(step(&side, d));
    Ok(out)
}

/// ckpt's side after one event: what it decided and what the recognizers
/// may read of its state beyond the decision.
#[derive(Clone, Debug)]
pub struct CkptStep {
    /// The decision.
    pub decision: Decision,
    /// The tasks' attempts.
    pub tasks: Vec<TaskView>,
    /// A stop-with-savepoint is requested or done (ckpt's stop phase;
    /// Flink's coordinator has none to compare it with).
    pub stopping: bool,
    /// The job finished: every task finished and `JobCommand::Finish` was
    /// emitted (ckpt's finish phase; Flink's coordinator has none).
    pub job_finished: bool,
}

/// Runs `seq` through ckpt and through `flink`, comparing after every
/// event; stops at the first divergence that is not a named choice, or
/// after a named choice that leaves the two states apart.
pub fn run_sequence(
    flink: &mut dyn FlinkSource,
    profile: &FlinkProfile,
    seq: &Sequence,
    allow: &[String],
) -> Result<SeqResult, RunError> {
    let ckpt = ckpt_decisions(profile, seq)?;
    let begin = flink.send(&flink_side::begin_command(&seq.config))?;
    let mut result = SeqResult::default();
    let mut last_flink = flink_side::decision(&begin, profile)?;
    let mut last_line = begin.clone();
    result.lines.push(begin);
    let mut masks = Masks::default();
    let n = seq.events.len();
    for i in 0..=n {
        let event = seq.events.get(i);
        let cmd = match event {
            Some(e) => flink_side::command(e, &last_line),
            None => serde_json::json!({"cmd": "end"}),
        };
        let resp = match flink.send(&cmd) {
            Ok(r) => r,
            Err(FlinkError::EndOfRecord(_)) => {
                result.record_ended = true;
                return Ok(result);
            }
            Err(e) => {
                let _ = flink.abandon();
                return Err(e.into());
            }
        };
        let fd = flink_side::decision(&resp, profile)?;
        result.lines.push(resp.clone());
        let ctx = catalog::Ctx {
            profile,
            config: &seq.config,
            event,
            index: i,
            before_ckpt: &ckpt[i].decision,
            before_flink: &last_flink,
            ckpt_tasks: &ckpt[i + 1].tasks,
            ckpt_stopping: ckpt[i].stopping && ckpt[i + 1].stopping,
            ckpt_job_finished: ckpt[i].job_finished,
            flink_line: &resp,
            before_flink_line: &last_line,
        };
        result.compared += 1;
        match judge(&ctx, &ckpt[i + 1].decision, &fd, &mut masks, allow) {
            Verdict::Agree(hits) => {
                result.names.extend(hits.iter().map(|h| h.name));
                if let Some(stop) = hits.iter().find(|h| h.after == After::Stop) {
                    result.stopped_by = Some(stop.name);
                    if event.is_some() {
                        flink.abandon()?;
                    }
                    return Ok(result);
                }
            }
            Verdict::Diverge(d) => {
                result.divergence = Some(*d);
                if event.is_some() {
                    flink.abandon()?;
                }
                return Ok(result);
            }
        }
        last_flink = fd;
        last_line = resp;
    }
    Ok(result)
}
