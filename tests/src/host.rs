//! Helpers for the async host's tests (`store`, `store_accounting`,
//! `sim_async_host`, `async_host_lifecycle`, the crash tests).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ckpt_core::host::fs::{Fs, MemFs};
use ckpt_core::host::store::{FileStore, OpenOptions, Recovery, StoreError};
use ckpt_core::JobId;

/// Opens the store on `fs` for `job` as a new leader (the generation above
/// the newest claimed), retaining `retained` checkpoints, with no committed
/// output and no state check: what a test that is not about leadership
/// needs.
pub fn open_store(
    fs: &Arc<dyn Fs>,
    job: JobId,
    retained: usize,
) -> Result<(FileStore, Recovery), StoreError> {
    let generation = FileStore::next_generation(&**fs)?;
    FileStore::open(Arc::clone(fs), OpenOptions::new(job, retained, generation))
}

/// A [`MemFs`] with injected I/O errors (other than `NotFound`, which
/// means "already gone"): removes of paths under a prefix fail with
/// permission denied and leave the file; while switched on, reads of paths
/// under a prefix fail the same way (the file is there) and `exists` says
/// `false` for them, as `Path::exists` does when the lookup fails; and, while
/// switched on, the sync
/// of a directory fails when the last rename into it made a name ending in
/// a suffix (`.meta`: the file store's commit point), after the rename, as
/// a real `fsync` of the directory fails: whether the rename is durable is
/// then unknown. Other syncs (a finalize's prepared file, state files) go
/// through. Or, while switched on, a rename to a name ending in the suffix
/// lands and answers with an error (a network file system's lost answer).
pub struct FaultyFs {
    inner: MemFs,
    fail_removes_under: Option<String>,
    removes_failing: AtomicBool,
    fail_reads_under: Option<String>,
    reads_failing: AtomicBool,
    fail_syncs_after_renames_to: Option<String>,
    /// Per directory: whether the last rename into it matched the suffix.
    last_renames: Mutex<Vec<(String, bool)>>,
    syncs_failing: AtomicBool,
    /// The matching renames (rather than the syncs after them) fail.
    renames_fail: bool,
    /// Listings leave out the paths starting with this
    /// ([`FaultyFs::hide_listed`]).
    hidden_from_listings: Mutex<Option<String>>,
}

impl FaultyFs {
    fn new(
        fail_removes_under: Option<String>,
        fail_reads_under: Option<String>,
        fail_syncs_after_renames_to: Option<String>,
    ) -> Self {
        FaultyFs {
            inner: MemFs::new(),
            fail_removes_under,
            removes_failing: AtomicBool::new(true),
            fail_reads_under,
            reads_failing: AtomicBool::new(false),
            fail_syncs_after_renames_to,
            last_renames: Mutex::new(Vec::new()),
            syncs_failing: AtomicBool::new(false),
            renames_fail: false,
            hidden_from_listings: Mutex::new(None),
        }
    }

    /// Removes of paths starting with `prefix` fail (from the start; see
    /// [`FaultyFs::fail_removes`]).
    #[must_use]
    pub fn failing_removes_under(prefix: &str) -> Self {
        Self::new(Some(prefix.to_string()), None, None)
    }

    /// Turns the failing removes on or off.
    pub fn fail_removes(&self, on: bool) {
        self.removes_failing.store(on, Ordering::SeqCst);
    }

    /// Once [`FaultyFs::fail_reads`] is on, reads of paths starting with
    /// `prefix` fail.
    #[must_use]
    pub fn failing_reads_under(prefix: &str) -> Self {
        Self::new(None, Some(prefix.to_string()), None)
    }

    /// Turns the failing reads on or off.
    pub fn fail_reads(&self, on: bool) {
        self.reads_failing.store(on, Ordering::SeqCst);
    }

    /// Listings leave out the paths starting with `prefix` (`None`: none),
    /// as a file system over an eventually consistent object store may
    /// miss the newest files; the files themselves stay readable.
    pub fn hide_listed(&self, prefix: Option<&str>) {
        *self
            .hidden_from_listings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = prefix.map(str::to_string);
    }

    /// Once [`FaultyFs::fail_syncs`] is on, the directory sync after a
    /// rename to a name ending in `suffix` fails.
    #[must_use]
    pub fn failing_syncs_after_renames_to(suffix: &str) -> Self {
        Self::new(None, None, Some(suffix.to_string()))
    }

    /// Once [`FaultyFs::fail_syncs`] is on, a rename to a name ending in
    /// `suffix` is made and answers with an error.
    #[must_use]
    pub fn losing_rename_answers_to(suffix: &str) -> Self {
        FaultyFs {
            renames_fail: true,
            ..Self::new(None, None, Some(suffix.to_string()))
        }
    }

    /// Turns the failing directory syncs (or rename answers) on or off.
    pub fn fail_syncs(&self, on: bool) {
        self.syncs_failing.store(on, Ordering::SeqCst);
    }

    fn read_fails(&self, path: &str) -> bool {
        self.reads_failing.load(Ordering::SeqCst)
            && self
                .fail_reads_under
                .as_deref()
                .is_some_and(|prefix| path.starts_with(prefix))
    }

    fn injected(what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{what}: injected failure"),
        )
    }
}

impl Fs for FaultyFs {
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.inner.write(path, bytes)
    }
    fn sync_file(&self, path: &str) -> io::Result<()> {
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let after_matching_rename = self
            .last_renames
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(d, matched)| d == dir && *matched);
        if !self.renames_fail && self.syncs_failing.load(Ordering::SeqCst) && after_matching_rename
        {
            return Err(Self::injected(dir));
        }
        self.inner.sync_dir(dir)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)?;
        let matched = self
            .fail_syncs_after_renames_to
            .as_deref()
            .is_some_and(|suffix| to.ends_with(suffix));
        let dir = to.rfind('/').map_or("", |i| &to[..i]);
        let mut last = self
            .last_renames
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        last.retain(|(d, _)| d != dir);
        last.push((dir.to_string(), matched));
        if self.renames_fail && matched && self.syncs_failing.load(Ordering::SeqCst) {
            return Err(Self::injected(to));
        }
        Ok(())
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        if self.removes_failing.load(Ordering::SeqCst)
            && self
                .fail_removes_under
                .as_deref()
                .is_some_and(|prefix| path.starts_with(prefix))
        {
            return Err(Self::injected(path));
        }
        self.inner.remove(path)
    }
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        if self.read_fails(path) {
            return Err(Self::injected(path));
        }
        self.inner.read(path)
    }
    fn exists(&self, path: &str) -> bool {
        !self.read_fails(path) && self.inner.exists(path)
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut names = self.inner.list(dir)?;
        let hidden = self
            .hidden_from_listings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(prefix) = hidden {
            names.retain(|n| !format!("{dir}/{n}").starts_with(&prefix));
        }
        Ok(names)
    }
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.inner.create_new(path, bytes)
    }
}
