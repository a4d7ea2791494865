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
    /// Reads a whole file.
    fn read(&self, path: &str) -> io::Result<Vec<u8>>;
    /// Whether `path` exists.
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
