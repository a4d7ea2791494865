//! [`ObjFs`]: ckpt-core's file-system trait ([`Fs`]) over an object store
//! (the `object_store` crate), so that code written against [`Fs`] (the
//! task side's state files, `ckpt_core::host::store::FileStore`) keeps its
//! files as objects: on the local file system (`LocalFileSystem`), in
//! memory (`InMemory`), or in a bucket (S3, GCS, Azure by configuration).
//!
//! # How each method maps
//!
//! A path `a/b/c` is the object `a/b/c` (the same key
//! [`ObjStore`](crate::ObjStore) reads: `state/<handle>` is one layout for
//! both); `""` is the root. A path `object_store` refuses (an empty
//! segment, `.` or `..`) is [`io::ErrorKind::InvalidInput`].
//!
//! | [`Fs`] | object store |
//! |---|---|
//! | `write` | `put` (`PutMode::Overwrite`): the object appears whole or not at all |
//! | `sync_file`, `sync_dir` | nothing: there is nothing left to make durable once a put has returned (see durability below) |
//! | `create_new` | `put` with `PutMode::Create`: of two racing creators one wins, the other gets [`io::ErrorKind::AlreadyExists`] |
//! | `rename` | `rename` (replaces the target) |
//! | `remove` | `head`, then `delete`: [`io::ErrorKind::NotFound`] if there was no object (`InMemory` and S3 delete a missing key without an error; the [`Fs`] contract wants `NotFound`) |
//! | `read` | `get`, the whole object |
//! | `exists` | `head` (any error but "not found" also answers `false`, as `Path::exists` does) |
//! | `list` | `list_with_delimiter`: the names of the objects directly under the prefix, sorted (nested prefixes are not names); a prefix with no objects lists as empty |
//! | `create_dir_all` | nothing: an object store has no directories (`LocalFileSystem` makes the parents of each object it puts) |
//!
//! Errors keep their kind: "not found" is [`io::ErrorKind::NotFound`],
//! "already exists" [`io::ErrorKind::AlreadyExists`], "not implemented"
//! (for example `PutMode::Create` on a store without conditional writes)
//! [`io::ErrorKind::Unsupported`]; others are [`io::ErrorKind::Other`] with
//! the store's message.
//!
//! # Durability and atomicity, by backend
//!
//! * **S3, GCS, Azure**: a put is durable when it returns; `rename` is a
//!   copy then a delete, **not atomic** (a crash between them leaves both
//!   names). Code that relies on [`Fs::rename`] being atomic (the file
//!   store's commit rename and `write_atomic`) does not get that there; the
//!   task side's state files never rename (write, read, remove).
//! * **`LocalFileSystem`**: a put writes a staged file and renames it into
//!   place (`Create`: hard-links it, which fails if the name exists), so an
//!   object is whole, and `rename` is the file system's atomic rename. But
//!   `object_store` does not fsync: a put that has returned survives the
//!   process (`kill -9`), not a crash of the machine. The file-system [`Fs`]
//!   (`StdFs`) is the one to use where that matters.
//! * **`InMemory`**: everything at once, nothing survives the process.
//!
//! # Blocking
//!
//! [`Fs`] is synchronous and `object_store` is async; each call waits for
//! the store's future:
//!
//! * **on a multi-thread tokio runtime** (a worker, its `block_on` thread
//!   or its blocking pool), with [`tokio::task::block_in_place`] and
//!   [`Handle::block_on`] on that runtime: the worker's other tasks move
//!   to another thread for the length of the call, as with
//!   `ckpt_core::host::fs::OffWorkerFs`;
//! * **on a current-thread runtime**, where neither is allowed, the future
//!   runs on this module's own runtime (one worker thread, made on first
//!   use and kept for the life of the process) while the calling thread
//!   blocks, so the caller's runtime stands still for the length of the
//!   call. An object store whose requests need tasks of the caller's
//!   runtime (an HTTP client whose pooled connections were opened there)
//!   would wait for them forever: give such a store a multi-thread runtime;
//! * **outside any runtime**, the future runs on the calling thread inside
//!   this module's own runtime's context.
//!
//! Nothing here panics; if the own runtime cannot be made, the call fails
//! with that error.

use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use ckpt_core::host::fs::Fs;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// The file-system primitives over an object store; cloning shares the
/// store. The module docs say how each method maps and blocks.
#[derive(Clone, Debug)]
pub struct ObjFs {
    store: Arc<dyn ObjectStore>,
}

impl ObjFs {
    /// The file system whose files are `store`'s objects (its root is the
    /// store's root: wrap the store in a `PrefixStore` for a sub-prefix).
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        ObjFs { store }
    }

    /// The object store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// Runs one call on the store to completion, blocking as the module
    /// docs describe.
    fn call<T, Fut>(&self, op: impl FnOnce(Arc<dyn ObjectStore>) -> Fut) -> io::Result<T>
    where
        T: Send + 'static,
        Fut: Future<Output = io::Result<T>> + Send + 'static,
    {
        let fut = op(Arc::clone(&self.store));
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| h.block_on(fut))
            }
            // A current-thread runtime (or another flavor): block_on would
            // panic here, and so would block_in_place. Run it on the own
            // runtime and wait for it on this thread.
            // (A std channel, not the task's `JoinHandle`: awaiting that
            // here would spend the caller's tokio budget, and once it is
            // spent its wake-up waits for a scheduler that is blocked.)
            Ok(_) => {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                own_runtime()?.spawn(async move {
                    let _ = tx.send(fut.await);
                });
                rx.recv().map_err(|_| {
                    io::Error::other("object store call: the task ended without an answer")
                })?
            }
            Err(_) => own_runtime()?.block_on(fut),
        }
    }
}

/// The runtime calls made off a multi-thread runtime run on: one worker,
/// made on first use, never dropped (a static is not), so no drop can
/// land inside an async context.
fn own_runtime() -> io::Result<&'static Runtime> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("ckpt-objfs")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| io::Error::other(format!("ObjFs's runtime: {e}")))
}

/// The object of an [`Fs`] path (`""`: the root).
fn object(path: &str) -> io::Result<Path> {
    Path::parse(path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// An `object_store` error as an I/O error of the same kind.
fn io_err(e: object_store::Error) -> io::Error {
    let kind = match &e {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
        object_store::Error::NotImplemented | object_store::Error::NotSupported { .. } => {
            io::ErrorKind::Unsupported
        }
        object_store::Error::InvalidPath { .. } => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

fn put_mode(mode: PutMode) -> PutOptions {
    PutOptions {
        mode,
        ..PutOptions::default()
    }
}

impl Fs for ObjFs {
    fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let (path, payload) = (
            object(path)?,
            PutPayload::from(Bytes::copy_from_slice(bytes)),
        );
        self.call(|s| async move {
            s.put_opts(&path, payload, put_mode(PutMode::Overwrite))
                .await
                .map(|_| ())
                .map_err(io_err)
        })
    }

    /// Nothing to do: a put is whole when it returns (durability by backend
    /// in the module docs).
    fn sync_file(&self, _path: &str) -> io::Result<()> {
        Ok(())
    }

    /// Nothing to do: an object store has no directory entries to sync.
    fn sync_dir(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (from, to) = (object(from)?, object(to)?);
        self.call(|s| async move { s.rename(&from, &to).await.map_err(io_err) })
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        let path = object(path)?;
        self.call(|s| async move {
            s.head(&path).await.map_err(io_err)?;
            match s.delete(&path).await {
                // Gone between the head and the delete: removed all the same.
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(io_err(e)),
            }
        })
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        let path = object(path)?;
        self.call(|s| async move {
            let got = s.get(&path).await.map_err(io_err)?;
            Ok(got.bytes().await.map_err(io_err)?.to_vec())
        })
    }

    fn exists(&self, path: &str) -> bool {
        let Ok(path) = object(path) else {
            return false;
        };
        self.call(|s| async move { s.head(&path).await.map_err(io_err) })
            .is_ok()
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let dir = object(dir)?;
        self.call(|s| async move {
            let prefix = (!dir.as_ref().is_empty()).then_some(&dir);
            crate::objstore::objects::names_under(&*s, prefix)
                .await
                .map_err(io_err)
        })
    }

    /// Nothing to do: an object store has no directories.
    fn create_dir_all(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }

    fn create_new(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let (path, payload) = (
            object(path)?,
            PutPayload::from(Bytes::copy_from_slice(bytes)),
        );
        self.call(|s| async move {
            s.put_opts(&path, payload, put_mode(PutMode::Create))
                .await
                .map(|_| ())
                .map_err(io_err)
        })
    }
}
