//! The file-system primitives the durable store and the async host use, as a
//! trait, so the same code runs on the real disk ([`StdFs`]), in memory
//! ([`MemFs`], for benchmarks and fast tests) and under a simulator (the
//! deterministic-simulation tests implement [`Fs`] over turmoil's
//! crash-consistent file system).
//!
//! The primitives are the ones whose crash semantics matter, and nothing
//! more: a write is not durable until [`Fs::sync_file`]; a created, renamed
//! or removed directory entry is not durable until [`Fs::sync_dir`] of its
//! directory. Paths are relative to the implementation's root and use `/`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// File-system primitives with explicit durability.
pub trait Fs: Send + Sync + 'static {
    /// Creates (or truncates) `path` and writes `bytes` to it. Not durable
    /// until [`Fs::sync_file`] and [`Fs::sync_dir`] of its directory.
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()>;
    /// Makes the contents of `path` durable (fsync).
    fn sync_file(&self, path: &str) -> io::Result<()>;
    /// Makes the entries of directory `dir` durable (fsync of the directory).
    fn sync_dir(&self, dir: &str) -> io::Result<()>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file (`NotFound` if it does not exist).
    fn remove(&self, path: &str) -> io::Result<()>;
    /// Reads a whole file (`NotFound` if it does not exist; any other
    /// error says nothing about whether it exists).
    fn read(&self, path: &str) -> io::Result<Vec<u8>>;
    /// Whether `path` exists (`false` also when that cannot be told: the
    /// store's recovery never takes `false` as "missing", it reads or
    /// lists instead).
    fn exists(&self, path: &str) -> bool;
    /// The file names in directory `dir`, sorted (empty if it does not exist).
    fn list(&self, dir: &str) -> io::Result<Vec<String>>;
    /// Creates directory `dir` and its parents (durable: parents synced).
    fn create_dir_all(&self, dir: &str) -> io::Result<()>;
    /// Creates `path` holding `bytes` only if no file of that name exists,
    /// atomically with respect to every other creator: of two callers
    /// racing for one name exactly one succeeds, the other gets
    /// [`io::ErrorKind::AlreadyExists`]. Like [`Fs::write`], not durable
    /// until [`Fs::sync_file`] and [`Fs::sync_dir`] of its directory. The
    /// store claims a leader generation with it.
    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()>;
}

/// Joins a directory and a file name.
#[must_use]
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The parent directory of `path` (`""` for a top-level name).
#[must_use]
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Writes `bytes` to `path` durably and atomically: a temporary file, fsync,
/// rename over `path`, fsync of the directory. After a crash `path` holds
/// either its old contents or `bytes`, never a mixture.
pub fn write_atomic(fs: &dyn Fs, path: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = format!("{path}.tmp");
    fs.write(&tmp, bytes)?;
    fs.sync_file(&tmp)?;
    fs.rename(&tmp, path)?;
    fs.sync_dir(parent(path))
}

/// Writes a new file durably: write, fsync, fsync of the directory.
pub fn write_durable(fs: &dyn Fs, path: &str, bytes: &[u8]) -> io::Result<()> {
    fs.write(path, bytes)?;
    fs.sync_file(path)?;
    fs.sync_dir(parent(path))
}

/// An [`Fs`] whose every call runs off the tokio worker it is made on: on a
/// worker of a multi-thread runtime each call of the inner file system goes
/// through [`tokio::task::block_in_place`], which hands the worker's other
/// tasks to another thread for the length of the call (an fsync of the
/// store's metadata on the coordinator driver, a task's state file in its
/// async part, a sink's pre-commit and commit), so they keep running; the
/// caller itself still waits for the call, as the contract wants (the
/// driver answers its own I/O before it reads the next event). Elsewhere
/// (a current-thread runtime, where `block_in_place` is not allowed, or no
/// runtime) the call runs inline.
///
/// Wrap the real disk in it ([`StdFs`]) when the host runs on a
/// multi-thread runtime; an in-memory file system gains nothing from it
/// (each call pays the hand-off, a few microseconds). The pipeline example
/// and `ckpt-node` do; the benchmarks measure both (benches/README.md).
#[derive(Clone, Debug)]
pub struct OffWorkerFs<F> {
    inner: F,
}

impl<F: Fs> OffWorkerFs<F> {
    /// `inner`, with its calls made off the worker.
    pub fn new(inner: F) -> Self {
        OffWorkerFs { inner }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &F {
        &self.inner
    }

    fn off<T>(&self, call: impl FnOnce(&F) -> T) -> T {
        let on_worker = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if on_worker {
            tokio::task::block_in_place(|| call(&self.inner))
        } else {
            call(&self.inner)
        }
    }
}

impl<F: Fs> Fs for OffWorkerFs<F> {
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.off(|f| f.write(path, bytes))
    }
    fn sync_file(&self, path: &str) -> io::Result<()> {
        self.off(|f| f.sync_file(path))
    }
    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.off(|f| f.sync_dir(dir))
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.off(|f| f.rename(from, to))
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        self.off(|f| f.remove(path))
    }
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.off(|f| f.read(path))
    }
    fn exists(&self, path: &str) -> bool {
        self.off(|f| f.exists(path))
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        self.off(|f| f.list(dir))
    }
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        self.off(|f| f.create_dir_all(dir))
    }
    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.off(|f| f.create_new(path, bytes))
    }
}

/// The real file system under a root directory.
#[derive(Clone, Debug)]
pub struct StdFs {
    root: PathBuf,
}

impl StdFs {
    /// A file system rooted at `root` (created if missing).
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(StdFs { root })
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, p: &str) -> PathBuf {
        if p.is_empty() {
            self.root.clone()
        } else {
            self.root.join(p)
        }
    }
}

// The one place where ckpt-core touches the disk: the purity lint
// (core/clippy.toml) keeps the reducers free of it.
#[allow(clippy::disallowed_methods)] // reason: this is the host's file-system adapter
impl Fs for StdFs {
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        std::fs::write(self.path(path), bytes)
    }
    fn sync_file(&self, path: &str) -> io::Result<()> {
        std::fs::OpenOptions::new()
            .read(true)
            .open(self.path(path))?
            .sync_all()
    }
    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        std::fs::File::open(self.path(dir))?.sync_all()
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.path(from), self.path(to))
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        std::fs::remove_file(self.path(path))
    }
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(path))
    }
    fn exists(&self, path: &str) -> bool {
        self.path(path).exists()
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let rd = match std::fs::read_dir(self.path(dir)) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path(path))?;
        f.write_all(bytes)
    }
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        std::fs::create_dir_all(self.path(dir))?;
        let mut d = dir;
        loop {
            self.sync_dir(parent(d))?;
            if d.is_empty() || parent(d).is_empty() {
                return Ok(());
            }
            d = parent(d);
        }
    }
}

/// An in-memory file system where every operation is immediately durable
/// (no crash model): for benchmarks and fast tests. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl MemFs {
    /// An empty file system.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
}

impl Fs for MemFs {
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.files().insert(path.to_string(), bytes.to_vec());
        Ok(())
    }
    fn sync_file(&self, path: &str) -> io::Result<()> {
        if self.files().contains_key(path) {
            Ok(())
        } else {
            Err(not_found(path))
        }
    }
    fn sync_dir(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut files = self.files();
        let bytes = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_string(), bytes);
        Ok(())
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        self.files()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.files()
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
    fn exists(&self, path: &str) -> bool {
        self.files().contains_key(path)
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        Ok(self
            .files()
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_string)
            .collect())
    }
    fn create_dir_all(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }
    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let mut files = self.files();
        if files.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{path}: file exists"),
            ));
        }
        files.insert(path.to_string(), bytes.to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod off_worker_tests {
    use super::{Fs, OffWorkerFs};
    use std::io;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// A file system whose `sync_file` says it was entered, then waits (at
    /// most a second) until the gate is opened; every other call does
    /// nothing.
    #[derive(Clone, Default)]
    struct Gate(Arc<(Mutex<(bool, bool)>, Condvar)>);

    impl Gate {
        fn open(&self) {
            self.0 .0.lock().unwrap().0 = true;
            self.0 .1.notify_all();
        }
        /// Waits (at most a second) until a `sync_file` call is inside.
        fn wait_entered(&self) {
            let (state, cv) = &*self.0;
            let _ = cv
                .wait_timeout_while(state.lock().unwrap(), Duration::from_secs(1), |s| !s.1)
                .unwrap();
        }
    }

    impl Fs for Gate {
        fn write(&self, _: &str, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn sync_file(&self, _: &str) -> io::Result<()> {
            let (state, cv) = &*self.0;
            state.lock().unwrap().1 = true;
            cv.notify_all();
            let (state, _) = cv
                .wait_timeout_while(state.lock().unwrap(), Duration::from_secs(1), |s| !s.0)
                .unwrap();
            if state.0 {
                Ok(())
            } else {
                Err(io::ErrorKind::TimedOut.into())
            }
        }
        fn sync_dir(&self, _: &str) -> io::Result<()> {
            Ok(())
        }
        fn rename(&self, _: &str, _: &str) -> io::Result<()> {
            Ok(())
        }
        fn remove(&self, _: &str) -> io::Result<()> {
            Ok(())
        }
        fn read(&self, _: &str) -> io::Result<Vec<u8>> {
            Ok(Vec::new())
        }
        fn exists(&self, _: &str) -> bool {
            false
        }
        fn list(&self, _: &str) -> io::Result<Vec<String>> {
            Ok(Vec::new())
        }
        fn create_dir_all(&self, _: &str) -> io::Result<()> {
            Ok(())
        }
        fn create_new(&self, _: &str, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
    }

    /// On a runtime with one worker, a task blocks in `sync_file` until a
    /// task spawned after it opens the gate: the second can run only if the
    /// first's call left the worker.
    fn sync_while_another_task_must_run(fs: Arc<dyn Fs>, gate: &Gate) -> io::Result<()> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let gate = gate.clone();
        rt.block_on(async move {
            let syncer = tokio::spawn(async move { fs.sync_file("f") });
            gate.wait_entered();
            tokio::spawn(async move { gate.open() });
            syncer.await.unwrap()
        })
    }

    #[test]
    fn a_blocking_call_leaves_the_worker_to_the_other_tasks() {
        let gate = Gate::default();
        let fs: Arc<dyn Fs> = Arc::new(OffWorkerFs::new(gate.clone()));
        sync_while_another_task_must_run(fs, &gate).expect("the gate opened");
    }

    #[test]
    fn inline_the_same_call_holds_the_worker_until_it_gives_up() {
        let gate = Gate::default();
        let fs: Arc<dyn Fs> = Arc::new(gate.clone());
        let e = sync_while_another_task_must_run(fs, &gate).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn off_a_worker_the_call_runs_inline() {
        let gate = Gate::default();
        gate.open();
        let fs = OffWorkerFs::new(gate);
        fs.sync_file("f").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { fs.sync_file("f") }).unwrap();
        // In a multi-thread runtime's `block_on` (not on a worker), too.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        rt.block_on(async { fs.sync_file("f") }).unwrap();
    }
}
