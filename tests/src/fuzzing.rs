//! The decoding and driving harness behind the cargo-fuzz targets in `fuzz/`.
//!
//! Each function takes the fuzzer's raw bytes, decodes a structured story
//! with `arbitrary` (configuration + action list, see [`crate::stories`]),
//! drives the real reducers and checks the shared invariants after every
//! step. A broken invariant, a nondeterministic replay or a panic inside a
//! reducer is a panic here, which is what libFuzzer reports as a crash.
//! Input that does not decode is simply uninteresting.
//!
//! The same functions replay the committed seed corpus from a stable
//! `cargo test` (tests/tests/corpus_replay.rs).

use std::ops::Range;

use arbitrary::{Arbitrary, Unstructured};
use ckpt_core::coordinator::{CoordinatorConfig, CoordinatorSettings, TASK_ID_MAX};
use ckpt_core::task::Semantics;
use ckpt_core::trace::{parse_trace, read_trace, replay, write_trace};

use crate::stories::coordinator::{self, CoordAction};
use crate::stories::system::{self, SysAction, SystemSpec, SystemStory};
use crate::stories::task::{self, TaskAction, TaskStory};
use crate::stories::SettingsChoice;

/// Longest action list decoded from one input (keeps executions fast).
pub const ACTIONS_MAX: usize = 256;

/// Steps allowed for a checkpoint to complete once a system story heals.
pub const HEAL_BOUND: usize = 2_000;

/// The fuzz targets, by name (the directory names under `fuzz/corpus/`).
pub const TARGETS: [&str; 4] = [
    "coordinator_events",
    "task_events",
    "system_events",
    "trace_decode",
];

/// Runs the harness of target `name` on `data` (panics on a finding).
/// Unknown names do nothing.
pub fn run_target(name: &str, data: &[u8]) {
    match name {
        "coordinator_events" => coordinator_events(data),
        "task_events" => task_events(data),
        "system_events" => system_events(data),
        "trace_decode" => trace_decode(data),
        _ => {}
    }
}

fn actions<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> Vec<T> {
    actions_spanned(u, 0, None)
}

/// [`actions`], and with `spans` the byte range of the whole input (of
/// `total` bytes, `u` being what is left of it) each action was decoded
/// from. Exact for actions decoded front to back; an action holding a
/// collection also takes its length from the input's end (`arbitrary`'s
/// rule), which its span then counts at the front.
fn actions_spanned<'a, T: Arbitrary<'a>>(
    u: &mut Unstructured<'a>,
    total: usize,
    mut spans: Option<&mut Vec<Range<usize>>>,
) -> Vec<T> {
    let mut v = Vec::new();
    while v.len() < ACTIONS_MAX {
        let from = total.saturating_sub(u.len());
        match T::arbitrary(u) {
            Ok(a) => v.push(a),
            Err(_) => break,
        }
        if let Some(s) = spans.as_deref_mut() {
            s.push(from..total.saturating_sub(u.len()));
        }
        if u.is_empty() {
            break;
        }
    }
    v
}

/// Decodes the raw settings the user might write and validates them: a
/// typed error or a config, never a panic. Configs with very large task ids
/// (legal up to `TASK_ID_MAX`, but dense) are not built, to keep executions
/// fast.
fn raw_settings(u: &mut Unstructured<'_>) {
    let Ok(raw) = CoordinatorSettings::arbitrary(u) else {
        return;
    };
    let big = raw
        .tasks_to_trigger
        .iter()
        .chain(&raw.tasks_to_wait)
        .chain(&raw.tasks_to_commit)
        .any(|t| t.0 >= (1 << 12) && t.0 < TASK_ID_MAX);
    if !big {
        if let Ok(cfg) = CoordinatorConfig::new(raw) {
            assert!(
                cfg.interval_ms() >= cfg.min_pause_ms(),
                "interval below pause"
            );
            assert!(cfg.timeout_ms() >= 1 && cfg.max_concurrent() >= 1);
        }
    }
}

/// Coordinator stories: a settings choice and up to [`ACTIONS_MAX`]
/// actions; every step checked with [`Rigor::Full`](ckpt_core::invariants::checked::Rigor):
/// the invariants, the handle ledger, and determinism with
/// pure-equals-in-place (`apply` on the story's state must agree with
/// `reduce` on that state before it). The story runs
/// once: replaying the whole story a second time repeated those per-step
/// checks and halved the executions per second (the proptest stories still
/// replay whole stories and compare the records).
pub fn coordinator_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(first) = u8::arbitrary(&mut u) else {
        return;
    };
    if first == 0xff {
        raw_settings(&mut u);
        return;
    }
    let Ok(settings) = SettingsChoice::arbitrary(&mut u) else {
        return;
    };
    let story = coordinator::CoordStory {
        settings,
        actions: actions::<CoordAction>(&mut u),
    };
    if let Err(f) = coordinator::run_unrecorded(&story) {
        panic!("{f}");
    }
}

/// Task stories (fixed semantics): every step checked with `Rigor::Full`
/// (invariants, the monitor, quiescence, determinism, pure-equals-in-place);
/// run once, as [`coordinator_events`].
pub fn task_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(aborted_ids_max) = u8::arbitrary(&mut u) else {
        return;
    };
    let story = TaskStory {
        semantics: Semantics::Fixed,
        aborted_ids_max,
        actions: actions::<TaskAction>(&mut u),
    };
    if let Err(f) = task::run(&story) {
        panic!("{f}");
    }
}

/// System stories (fixed semantics) over the faulty network, then healing:
/// every step checked, and a checkpoint must complete after healing.
pub fn system_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(spec) = SystemSpec::arbitrary(&mut u) else {
        return;
    };
    let story = SystemStory {
        spec,
        actions: actions::<SysAction>(&mut u),
    };
    if let Err(f) = system::run_unrendered(&story, Semantics::Fixed, Some(HEAL_BOUND)) {
        panic!("{f}");
    }
}

/// Arbitrary bytes into the JSON-lines trace reader: a typed error or a
/// trace, never a panic; a trace read must write back and re-read equal,
/// and (when small) replay without panicking.
pub fn trace_decode(data: &[u8]) {
    let Ok(trace) = read_trace(data) else {
        return;
    };
    let mut buf = Vec::new();
    write_trace(&mut buf, &trace).unwrap_or_else(|e| panic!("write_trace failed: {e}"));
    let text = String::from_utf8(buf).unwrap_or_else(|e| panic!("trace not UTF-8: {e}"));
    let again = parse_trace(&text).unwrap_or_else(|e| panic!("re-read failed: {e}\n{text}"));
    assert_eq!(trace, again, "trace does not round-trip");
    let small_coordinator = trace.coordinator.as_ref().is_none_or(|s| {
        s.tasks_to_trigger
            .iter()
            .chain(&s.tasks_to_wait)
            .chain(&s.tasks_to_commit)
            .all(|t| t.0 < (1 << 12))
    });
    if small_coordinator && trace.steps.len() <= 4_096 {
        let _ = replay(&trace);
    }
}

/// Where the parts of a story input lie: the header (settings or shape)
/// `0..header`, then one byte range per decoded action, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes before the first action.
    pub header: usize,
    /// Each action's bytes.
    pub actions: Vec<Range<usize>>,
}

/// The [`Layout`] of `data` for story target `name` (`None` for
/// `trace_decode`, for an input too short for its header and for a
/// `coordinator_events` input that validates raw settings).
#[must_use]
pub fn story_layout(name: &str, data: &[u8]) -> Option<Layout> {
    let total = data.len();
    let mut u = Unstructured::new(data);
    let mut spans = Vec::new();
    match name {
        "coordinator_events" => {
            if u8::arbitrary(&mut u).ok()? == 0xff {
                return None;
            }
            SettingsChoice::arbitrary(&mut u).ok()?;
            let header = total - u.len();
            actions_spanned::<CoordAction>(&mut u, total, Some(&mut spans));
            Some(Layout {
                header,
                actions: spans,
            })
        }
        "task_events" => {
            u8::arbitrary(&mut u).ok()?;
            let header = total - u.len();
            actions_spanned::<TaskAction>(&mut u, total, Some(&mut spans));
            Some(Layout {
                header,
                actions: spans,
            })
        }
        "system_events" => {
            SystemSpec::arbitrary(&mut u).ok()?;
            let header = total - u.len();
            actions_spanned::<SysAction>(&mut u, total, Some(&mut spans));
            Some(Layout {
                header,
                actions: spans,
            })
        }
        _ => None,
    }
}

/// The system story `data` decodes to (what [`system_events`] runs).
#[must_use]
pub fn system_story(data: &[u8]) -> Option<SystemStory> {
    let mut u = Unstructured::new(data);
    let spec = SystemSpec::arbitrary(&mut u).ok()?;
    Some(SystemStory {
        spec,
        actions: actions::<SysAction>(&mut u),
    })
}

/// The task story `data` decodes to (what [`task_events`] runs).
#[must_use]
pub fn task_story(data: &[u8]) -> Option<TaskStory> {
    let mut u = Unstructured::new(data);
    let aborted_ids_max = u8::arbitrary(&mut u).ok()?;
    Some(TaskStory {
        semantics: Semantics::Fixed,
        aborted_ids_max,
        actions: actions::<TaskAction>(&mut u),
    })
}

/// One structure-aware change of a story input (see [`mutate_story`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Mutate the bytes of action `i` only (libFuzzer's byte mutations on
    /// that slice; it may grow or shrink).
    Action(usize),
    /// Remove action `i`.
    Delete(usize),
    /// Insert a copy of action `i` before action `j` (`j` = count: at the end).
    Duplicate(usize, usize),
    /// Exchange actions `i` and `j`.
    Swap(usize, usize),
    /// Mutate the header bytes only (settings, shape).
    Header,
    /// libFuzzer's own mutation of the whole input.
    Whole,
}

/// A byte mutator with libFuzzer's `LLVMFuzzerMutate` contract: mutate
/// `data[..size]` in place within `data[..max_size]`, return the new size.
pub type ByteMutator<'m> = &'m mut dyn FnMut(&mut [u8], usize, usize) -> usize;

/// Applies `m` to story `input` (with its `layout`), returning the new
/// input cut to at most `max_size` bytes at an action boundary.
#[must_use]
pub fn apply_mutation(
    input: &[u8],
    layout: &Layout,
    m: Mutation,
    max_size: usize,
    bytes: ByteMutator<'_>,
) -> Vec<u8> {
    let head = &input[..layout.header];
    let spans = &layout.actions;
    // The actions' bytes as slices; the bytes after the last action (none,
    // or what the last decode left) stay at the end.
    let tail = spans.last().map_or(layout.header, |r| r.end);
    let mut parts: Vec<Vec<u8>> = spans.iter().map(|r| input[r.clone()].to_vec()).collect();
    let mut head = head.to_vec();
    let n = parts.len();
    match m {
        Mutation::Action(i) if i < n => {
            let p = &mut parts[i];
            let len = p.len();
            p.resize(len + 16, 0);
            let new = bytes(p, len, len + 16);
            p.truncate(new);
        }
        Mutation::Delete(i) if i < n && n > 1 => {
            parts.remove(i);
        }
        Mutation::Duplicate(i, j) if i < n => {
            let p = parts[i].clone();
            parts.insert(j.min(n), p);
        }
        Mutation::Swap(i, j) if i < n && j < n => parts.swap(i, j),
        Mutation::Header => {
            let len = head.len();
            head.resize(len + 4, 0);
            let new = bytes(&mut head, len, len + 4);
            head.truncate(new);
        }
        Mutation::Whole => {
            let mut out = input.to_vec();
            let len = out.len();
            out.resize(max_size.max(len), 0);
            let new = bytes(&mut out, len, max_size.max(len));
            out.truncate(new.min(max_size));
            return out;
        }
        _ => {}
    }
    let mut out = head;
    for p in &parts {
        if out.len() + p.len() > max_size {
            break;
        }
        out.extend_from_slice(p);
    }
    if out.len() + (input.len() - tail) <= max_size {
        out.extend_from_slice(&input[tail..]);
    }
    out.truncate(max_size);
    out
}

/// A small deterministic generator for the mutator's choices.
struct Pick(u64);

impl Pick {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % (n.max(1) as u64)).unwrap_or(0)
    }
}

/// libFuzzer's custom mutator for story target `name`: most mutations
/// work on whole actions (mutate one action's bytes, delete, duplicate or
/// swap actions, mutate the header), so a mutated long story is still the
/// same long story with one change, instead of one whose every later
/// action decodes differently after a byte inserted near its start. Half
/// the mutations are libFuzzer's own over the whole input (`bytes`: its
/// comparison-guided and dictionary mutations, and new stories at random;
/// with one in eight, the first run covered fewer edges per execution than
/// libFuzzer alone), as are all those of inputs without a story layout.
/// Writes the result into `data` (a buffer of at least `max_size` bytes)
/// and returns its size.
pub fn mutate_story(
    name: &str,
    data: &mut [u8],
    size: usize,
    max_size: usize,
    seed: u32,
    bytes: ByteMutator<'_>,
) -> usize {
    let mut pick = Pick(u64::from(seed) | (1 << 40));
    let layout = story_layout(name, &data[..size]).filter(|l| !l.actions.is_empty());
    let Some(layout) = layout else {
        return bytes(data, size, max_size);
    };
    let n = layout.actions.len();
    let m = match pick.below(16) {
        0..=3 => Mutation::Action(pick.below(n)),
        4 => Mutation::Delete(pick.below(n)),
        5 => Mutation::Duplicate(pick.below(n), pick.below(n + 1)),
        6 => Mutation::Swap(pick.below(n), pick.below(n)),
        7 => Mutation::Header,
        _ => Mutation::Whole,
    };
    if m == Mutation::Whole {
        return bytes(data, size, max_size);
    }
    let out = apply_mutation(&data[..size], &layout, m, max_size, bytes);
    let len = out.len().min(data.len());
    data[..len].copy_from_slice(&out[..len]);
    len
}

/// libFuzzer's custom cross-over for story target `name`: the header and
/// the first actions of `a`, then actions of `b` from a random one on,
/// written into `out`; returns the size (0 when neither has a layout).
pub fn cross_stories(name: &str, a: &[u8], b: &[u8], out: &mut [u8], seed: u32) -> usize {
    let mut pick = Pick(u64::from(seed) | (1 << 41));
    let (Some(la), Some(lb)) = (story_layout(name, a), story_layout(name, b)) else {
        return 0;
    };
    let cut_a = pick.below(la.actions.len() + 1);
    let cut_b = pick.below(lb.actions.len() + 1);
    let end_a = la
        .actions
        .get(cut_a)
        .map_or(la.actions.last().map_or(la.header, |r| r.end), |r| r.start);
    let from_b = lb.actions.get(cut_b).map_or(b.len(), |r| r.start);
    let mut len = 0;
    for &x in a[..end_a].iter().chain(&b[from_b..]) {
        if len == out.len() {
            break;
        }
        out[len] = x;
        len += 1;
    }
    len
}
