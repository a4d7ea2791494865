//! Shared files ([`crate::files`]): a physical file is deleted once, after
//! its last reference.
//!
//! Two checks, each able to fail:
//!
//! * [`check_state`], on every step of the file-merging manager: each
//!   file's reference count equals the number of its segments not yet
//!   released ([`names::REFS_MATCH_SEGMENTS`]), and at most one file is
//!   open.
//! * [`FileLedger`], fed what the host did to physical files (each
//!   [`crate::files::FilesEffect`]) and asked with the
//!   [`super::durability::DurableLedger`]'s view of which logical handles
//!   still exist: a physical file is deleted only when none of its
//!   segments exists any more (after its last reference), at most once,
//!   and never takes a segment after it was deleted; when the world is
//!   quiet, every file none of whose segments exists is deleted, unless it
//!   is the open one ([`names::FILE_DELETED_ONCE`]). A file deleted while
//!   a stored checkpoint references a segment in it is committed state
//!   lost: this check sees it first.
//!
//! Memory is bounded by the files that exist (file numbers only grow, so a
//! number below the highest seen that is not there was deleted).

use std::collections::BTreeMap;

use super::{ensure, Violation};
use crate::files::{FilesState, PhysicalFile};
use crate::types::StateHandle;

/// Invariant names.
pub mod names {
    /// A physical file is deleted once, after its last reference.
    pub const FILE_DELETED_ONCE: &str = "physical-file-deleted-once-after-last-reference";
    /// Each file's reference count equals its segments not released.
    pub const REFS_MATCH_SEGMENTS: &str = "file-refs-match-segments";

    /// Every name above.
    pub const ALL: [&str; 2] = [FILE_DELETED_ONCE, REFS_MATCH_SEGMENTS];
}

/// The manager's state is consistent: counts equal unreleased segments, at
/// most one file open.
pub fn check_state(s: &FilesState) -> Result<(), Violation> {
    for (file, refs, unreleased, _) in s.counts() {
        ensure(
            usize::try_from(refs).is_ok_and(|r| r == unreleased),
            names::REFS_MATCH_SEGMENTS,
            || {
                format!("{file} counts {refs} references but {unreleased} of its segments are not released")
            },
        )?;
    }
    let open = s.counts().filter(|c| c.3).count();
    ensure(open <= 1, names::REFS_MATCH_SEGMENTS, || {
        format!("{open} files open")
    })
}

/// The physical files that exist and the segments written into each; see
/// the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "codec", derive(serde::Serialize, serde::Deserialize))]
pub struct FileLedger {
    files: BTreeMap<PhysicalFile, Vec<StateHandle>>,
    /// One above the highest file number seen.
    next: u64,
}

impl FileLedger {
    /// No files.
    #[must_use]
    pub fn new() -> FileLedger {
        FileLedger::default()
    }

    /// The physical files that exist, ascending.
    pub fn existing(&self) -> impl Iterator<Item = PhysicalFile> + '_ {
        self.files.keys().copied()
    }

    /// The same ledger with every handle renamed (symmetry reduction).
    #[cfg(feature = "symmetry")]
    #[must_use]
    pub fn rename_handles(&self, rename: &dyn Fn(StateHandle) -> StateHandle) -> FileLedger {
        FileLedger {
            files: self
                .files
                .iter()
                .map(|(f, hs)| (*f, hs.iter().map(|h| rename(*h)).collect()))
                .collect(),
            next: self.next,
        }
    }

    /// The host wrote segment `handle` into `file` (a new file, or one that
    /// exists).
    pub fn appended(&mut self, file: PhysicalFile, handle: StateHandle) -> Result<(), Violation> {
        let exists = self.files.contains_key(&file);
        ensure(
            exists || file.0 >= self.next,
            names::FILE_DELETED_ONCE,
            || format!("segment {handle} written into {file}, which was deleted"),
        )?;
        self.next = self.next.max(file.0.saturating_add(1));
        self.files.entry(file).or_default().push(handle);
        Ok(())
    }

    /// The host deleted `file`; `exists` says whether a logical handle still
    /// exists. Returns how many segments the file held.
    pub fn deleted(
        &mut self,
        file: PhysicalFile,
        exists: &dyn Fn(StateHandle) -> bool,
    ) -> Result<usize, Violation> {
        let Some(segments) = self.files.get(&file) else {
            return Err(Violation::new(
                names::FILE_DELETED_ONCE,
                format!("{file} deleted, but it does not exist (deleted twice, or never written)"),
            ));
        };
        let referenced: Vec<StateHandle> =
            segments.iter().copied().filter(|h| exists(*h)).collect();
        ensure(referenced.is_empty(), names::FILE_DELETED_ONCE, || {
            format!("{file} deleted while its segments {referenced:?} are still referenced")
        })?;
        Ok(self.files.remove(&file).map_or(0, |s| s.len()))
    }

    /// When nothing is in flight anywhere: every file but `open` still
    /// holds a segment that exists (else it should have been deleted).
    pub fn check_quiet(
        &self,
        exists: &dyn Fn(StateHandle) -> bool,
        open: Option<PhysicalFile>,
    ) -> Result<(), Violation> {
        let leaked: Vec<PhysicalFile> = self
            .files
            .iter()
            .filter(|(f, hs)| Some(**f) != open && !hs.iter().any(|h| exists(*h)))
            .map(|(f, _)| *f)
            .collect();
        ensure(leaked.is_empty(), names::FILE_DELETED_ONCE, || {
            format!("quiet, but {leaked:?} hold no referenced segment and were never deleted")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u64) -> StateHandle {
        StateHandle(n)
    }

    #[test]
    fn a_file_goes_once_after_its_last_reference_and_takes_nothing_after() {
        let mut l = FileLedger::new();
        let f = PhysicalFile(0);
        l.appended(f, h(1)).expect("new file");
        l.appended(f, h(2)).expect("same file");
        let v = l.deleted(f, &|x| x == h(2)).map_err(|v| v.invariant);
        assert_eq!(v, Err(names::FILE_DELETED_ONCE), "h2 still referenced");
        assert_eq!(l.deleted(f, &|_| false), Ok(2));
        let twice = l.deleted(f, &|_| false).map_err(|v| v.invariant);
        assert_eq!(twice, Err(names::FILE_DELETED_ONCE));
        let after = l.appended(f, h(3)).map_err(|v| v.invariant);
        assert_eq!(after, Err(names::FILE_DELETED_ONCE));
        l.appended(PhysicalFile(1), h(3)).expect("a newer file");
    }

    #[test]
    fn quiet_every_unreferenced_file_but_the_open_one_is_deleted() {
        let mut l = FileLedger::new();
        l.appended(PhysicalFile(0), h(1)).expect("write");
        l.appended(PhysicalFile(1), h(2)).expect("write");
        l.check_quiet(&|x| x == h(1), Some(PhysicalFile(1)))
            .expect("file 1 is open");
        let leak = l.check_quiet(&|x| x == h(2), Some(PhysicalFile(1)));
        assert_eq!(leak.map_err(|v| v.invariant), Err(names::FILE_DELETED_ONCE));
    }
}
