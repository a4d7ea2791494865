//! Shared files: several logical state handles in one physical file,
//! reference counted, as Flink's file merging does (FLIP-306, Flink 1.20's
//! `FileMergingSnapshotManager`), as a third pure reducer beside the
//! coordinator and the task side.
//!
//! A host that merges files writes each logical state handle (what a task
//! acknowledges, and what the coordinator retains and discards) as a
//! segment of a physical file. [`FilesState`] decides which file a segment
//! goes to and when a file may go: each physical file counts the segments
//! in it that are not discarded yet, and is deleted once, when the count
//! reaches zero and no segment can be added to it any more. It never
//! decides *whether* a logical handle goes: the coordinator and the task
//! do (their `Discard` effects), and the host feeds every one of them here.
//!
//! # Driving contract
//!
//! One [`FilesState`] per set of tasks that share files (a task manager),
//! events serialised like the other machines':
//!
//! | event | when the host sends it |
//! |---|---|
//! | [`FilesEvent::SegmentWritten`] | a task's async part has written a new logical handle (before it acknowledges it) |
//! | [`FilesEvent::Discard`] | it carries out a `Discard` of a logical handle, from either machine or its own cleaner; a repeat is harmless |
//! | [`FilesEvent::Restored`] | the job restored (after a failover, before the new task attempts write anything) |
//!
//! | effect | what the host does |
//! |---|---|
//! | [`FilesEffect::Append`] | writes the segment into that physical file (creating the file first if it is new) |
//! | [`FilesEffect::Delete`] | deletes that physical file |
//!
//! # The semantics, and the two races Flink shipped
//!
//! * **A logical handle is released once** (FLINK-36125): a second discard
//!   of a segment already released is [`Ignored::AlreadyReleased`], and one
//!   of a segment whose file is gone, or that was never written here, is
//!   [`Ignored::UnknownSegment`]. Flink 1.20 released a logical file twice
//!   when a checkpoint's abort and an I/O error on another thread both
//!   discarded it: the physical file's count went one too low and the file
//!   was deleted while another segment in it was still referenced
//!   ([`LegacyBug::LogicalFileReleasedTwice`] reproduces it). In ckpt the
//!   repeat comes from the coordinator, whose discard of a handle it
//!   already gave up is an idempotent repeat (a duplicated late ack).
//! * **After a restore no file of before the restore takes a new segment**
//!   (FLINK-35803, decided here): [`FilesEvent::Restored`] closes the open
//!   file, and deletes it if nothing in it is referenced any more; the new
//!   run's segments go to new files. The restored segments keep their files
//!   and counts, and those files go once their last segment is discarded.
//!   Flink 1.20 went on appending the new job's segments to files restored
//!   from the old one. In ckpt's world one job owns every file, so a reused
//!   file breaks no promise the checker can observe; there is no legacy
//!   knob for it, and the unit tests pin the decision.
//!
//! A file takes at most [`FilesConfig::segments_per_file`] segments
//! (Flink's size threshold, counted in segments), from any checkpoint (Flink's
//! `across-checkpoint-boundary: true`); then it is closed. The open file is
//! never deleted, even with nothing referenced in it: it may still take a
//! segment.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::types::{LegacyBug, Semantics, StateHandle};

/// A physical file holding one or more logical state handles (segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PhysicalFile(pub u64);

impl std::fmt::Display for PhysicalFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "file-{}", self.0)
    }
}

/// How files are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FilesConfig {
    /// Segments a physical file takes before it is closed (at least 1).
    pub segments_per_file: u8,
    /// Fixed, or a legacy bug (only [`LegacyBug::LogicalFileReleasedTwice`]
    /// lives here).
    pub semantics: Semantics,
}

/// A configuration this reducer refuses.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FilesError {
    /// `segments_per_file` is 0: no file could take a segment.
    #[error("segments_per_file must be at least 1")]
    NoSegments,
}

/// One segment of a physical file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
struct Segment {
    handle: StateHandle,
    /// Discarded (its reference released).
    released: bool,
}

/// One physical file that exists.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
struct FileEntry {
    file: PhysicalFile,
    /// Segments in the order written.
    segments: Vec<Segment>,
    /// The reference count: segments not yet released (Flink's
    /// `PhysicalFile.refCount`, kept as a counter, as Flink does).
    refs: u32,
    /// Still takes segments.
    open: bool,
}

/// The file-merging manager's state: the physical files that exist, their
/// segments and counts, and the next file's number. Bounded by the files
/// that exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct FilesState {
    config: FilesConfig,
    next: u64,
    /// Sorted by file; at most one is open.
    files: Vec<FileEntry>,
}

/// An event for the file-merging manager (the driving contract above).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FilesEvent {
    /// A task wrote a new logical handle; it goes into the open file.
    SegmentWritten {
        /// The logical handle.
        handle: StateHandle,
    },
    /// A logical handle was discarded (by either machine, or the host).
    Discard {
        /// The logical handle.
        handle: StateHandle,
    },
    /// The job restored: no file of before takes a new segment.
    Restored,
}

/// What the host does for the manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FilesEffect {
    /// Write the segment into the file (create the file first if new).
    Append {
        /// The physical file.
        file: PhysicalFile,
        /// The logical handle written into it.
        handle: StateHandle,
    },
    /// Delete the physical file: nothing references it, nothing is added.
    Delete {
        /// The physical file.
        file: PhysicalFile,
    },
}

/// What an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Applied {
    /// The segment went into `file` (`opened`: a new file).
    Appended {
        /// The file.
        file: PhysicalFile,
        /// Whether the file is new.
        opened: bool,
    },
    /// A segment's reference was released; `refs` are left in `file`.
    Released {
        /// The file.
        file: PhysicalFile,
        /// References left.
        refs: u32,
    },
    /// The last reference was released and the file deleted.
    Deleted {
        /// The file.
        file: PhysicalFile,
    },
    /// A restore closed the open file (deleted, if nothing in it was
    /// referenced).
    Closed {
        /// The file.
        file: PhysicalFile,
    },
}

/// Why an event changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ignored {
    /// The handle is already a segment of a file.
    KnownSegment,
    /// No file that exists holds the handle (its file is gone, or it was
    /// never written as a segment here).
    UnknownSegment,
    /// The segment's reference was already released (a repeated discard).
    AlreadyReleased,
    /// A restore with no file open: nothing to close.
    NothingOpen,
}

/// The outcome of one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// The event changed the state.
    Applied(Applied),
    /// Nothing changed, no effects.
    Ignored(Ignored),
}

/// The result of one event: effects in order, and the outcome.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// Effects for the host, in order.
    pub effects: Vec<FilesEffect>,
    /// What happened.
    pub outcome: Outcome,
}

/// The pure result of one event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The next state.
    pub state: FilesState,
    /// Effects and outcome.
    pub step: Step,
}

/// The pure entry point: `state` is left as it is.
#[must_use]
pub fn reduce(state: &FilesState, event: FilesEvent) -> Transition {
    let mut next = state.clone();
    let step = next.apply(event);
    Transition { state: next, step }
}

impl FilesState {
    /// A manager with no files.
    pub fn new(config: FilesConfig) -> Result<FilesState, FilesError> {
        if config.segments_per_file == 0 {
            return Err(FilesError::NoSegments);
        }
        Ok(FilesState {
            config,
            next: 0,
            files: Vec::new(),
        })
    }

    /// The file that takes the next segment, if one is open.
    #[must_use]
    pub fn open_file(&self) -> Option<PhysicalFile> {
        self.files.iter().find(|f| f.open).map(|f| f.file)
    }

    /// Every physical file that exists with its reference count and its
    /// segments (released or not), ascending.
    pub fn files(&self) -> impl Iterator<Item = (PhysicalFile, u32, Vec<StateHandle>)> + '_ {
        self.files.iter().map(|f| {
            (
                f.file,
                f.refs,
                f.segments.iter().map(|s| s.handle).collect(),
            )
        })
    }

    /// Each file with its reference count, the number of its segments not
    /// released (what the count must equal: `invariants::files`) and
    /// whether it is open, ascending by file.
    pub fn counts(&self) -> impl Iterator<Item = (PhysicalFile, u32, usize, bool)> + '_ {
        self.files.iter().map(|f| {
            let unreleased = f.segments.iter().filter(|s| !s.released).count();
            (f.file, f.refs, unreleased, f.open)
        })
    }

    /// The segments of `file` whose reference is not released, in the
    /// order written (empty if the file does not exist).
    #[must_use]
    pub fn referenced(&self, file: PhysicalFile) -> Vec<StateHandle> {
        self.files
            .iter()
            .filter(|f| f.file == file)
            .flat_map(|f| f.segments.iter().filter(|s| !s.released).map(|s| s.handle))
            .collect()
    }

    /// The same state with every handle renamed (symmetry reduction).
    #[cfg(feature = "symmetry")]
    #[must_use]
    pub fn rename_handles(&self, rename: &dyn Fn(StateHandle) -> StateHandle) -> FilesState {
        let mut s = self.clone();
        for f in &mut s.files {
            for seg in &mut f.segments {
                seg.handle = rename(seg.handle);
            }
        }
        s
    }

    /// The in-place entry point (the same code path as [`reduce`]); an
    /// `Ignored` event leaves the state as it was.
    pub fn apply(&mut self, event: FilesEvent) -> Step {
        let mut effects = Vec::new();
        let outcome = match event {
            FilesEvent::SegmentWritten { handle } => self.written(handle, &mut effects),
            FilesEvent::Discard { handle } => self.discard(handle, &mut effects),
            FilesEvent::Restored => self.restored(&mut effects),
        };
        Step { effects, outcome }
    }

    fn written(&mut self, handle: StateHandle, fx: &mut Vec<FilesEffect>) -> Outcome {
        if self.position_of(handle).is_some() {
            return Outcome::Ignored(Ignored::KnownSegment);
        }
        let cap = usize::from(self.config.segments_per_file);
        let (at, opened) = match self.files.iter().position(|f| f.open) {
            Some(at) => (at, false),
            None => {
                let file = PhysicalFile(self.next);
                self.next = self.next.saturating_add(1);
                // File numbers only grow: the new file sorts last.
                self.files.push(FileEntry {
                    file,
                    segments: Vec::new(),
                    refs: 0,
                    open: true,
                });
                (self.files.len() - 1, true)
            }
        };
        let Some(f) = self.files.get_mut(at) else {
            return Outcome::Ignored(Ignored::UnknownSegment);
        };
        f.segments.push(Segment {
            handle,
            released: false,
        });
        f.refs = f.refs.saturating_add(1);
        f.open = f.segments.len() < cap;
        fx.push(FilesEffect::Append {
            file: f.file,
            handle,
        });
        Outcome::Applied(Applied::Appended {
            file: f.file,
            opened,
        })
    }

    fn discard(&mut self, handle: StateHandle, fx: &mut Vec<FilesEffect>) -> Outcome {
        let Some((at, seg)) = self.position_of(handle) else {
            return Outcome::Ignored(Ignored::UnknownSegment);
        };
        let twice = self
            .config
            .semantics
            .is(LegacyBug::LogicalFileReleasedTwice);
        let Some(f) = self.files.get_mut(at) else {
            return Outcome::Ignored(Ignored::UnknownSegment);
        };
        let Some(s) = f.segments.get_mut(seg) else {
            return Outcome::Ignored(Ignored::UnknownSegment);
        };
        // FIX (FLINK-36125): a segment's reference is released once. The
        // legacy manager released it again on every discard.
        if s.released && !twice {
            return Outcome::Ignored(Ignored::AlreadyReleased);
        }
        s.released = true;
        f.refs = f.refs.saturating_sub(1);
        let (file, refs) = (f.file, f.refs);
        if refs == 0 && !f.open {
            self.files.remove(at);
            fx.push(FilesEffect::Delete { file });
            return Outcome::Applied(Applied::Deleted { file });
        }
        Outcome::Applied(Applied::Released { file, refs })
    }

    fn restored(&mut self, fx: &mut Vec<FilesEffect>) -> Outcome {
        let Some(at) = self.files.iter().position(|f| f.open) else {
            return Outcome::Ignored(Ignored::NothingOpen);
        };
        let Some(f) = self.files.get_mut(at) else {
            return Outcome::Ignored(Ignored::NothingOpen);
        };
        // FLINK-35803, as decided here: a file of the run before the
        // restore takes no segment of the new run.
        f.open = false;
        let file = f.file;
        if f.refs == 0 {
            self.files.remove(at);
            fx.push(FilesEffect::Delete { file });
        }
        Outcome::Applied(Applied::Closed { file })
    }

    /// The file and segment index of `handle`.
    fn position_of(&self, handle: StateHandle) -> Option<(usize, usize)> {
        self.files.iter().enumerate().find_map(|(i, f)| {
            f.segments
                .iter()
                .position(|s| s.handle == handle)
                .map(|j| (i, j))
        })
    }
}

#[cfg(test)]
mod tests;
