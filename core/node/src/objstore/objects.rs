//! Object I/O as the store does it: reading, listing, writing and deleting
//! objects with errors in the store's terms ([`StoreError`]), and parsing
//! the layout's object names.

use std::io;

use ckpt_core::host::store::{state_path, StoreError};
use ckpt_core::{CheckpointId, StateHandle};
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

/// An object store's error in the store's terms: an `Io` error whose kind
/// says what a caller may do about it. Access the store refuses is
/// `io::ErrorKind::PermissionDenied`, which a restart will not cure
/// (ckpt-node exits 3 on it, not 1: a supervisor restarting it would
/// loop): a cloud store's `PermissionDenied` or `Unauthenticated`, or any
/// error caused by an I/O error of that kind (`LocalFileSystem` reports a
/// file it may not open as `Generic`, with the system's error as its
/// source). Everything else is `Other`.
pub(super) fn obj_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(object_store::Error) -> StoreError + 'a {
    move |e| {
        let kind = if denied(&e) {
            io::ErrorKind::PermissionDenied
        } else {
            io::ErrorKind::Other
        };
        StoreError::Io {
            op,
            path: path.to_string(),
            source: io::Error::new(kind, e),
        }
    }
}

/// Whether `e` is, or was caused by, a refusal of access.
fn denied(e: &object_store::Error) -> bool {
    if matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    ) {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::PermissionDenied)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

pub(super) fn bad_log(path: &Path, why: String) -> StoreError {
    StoreError::Io {
        op: "decode",
        path: path.to_string(),
        source: io::Error::new(io::ErrorKind::InvalidData, why),
    }
}

/// Writes state handle `handle`'s object (a task's part of a checkpoint).
pub async fn write_state(
    store: &dyn ObjectStore,
    handle: StateHandle,
    bytes: Vec<u8>,
) -> Result<(), StoreError> {
    let path = Path::from(state_path(handle));
    store
        .put(&path, PutPayload::from(bytes))
        .await
        .map(|_| ())
        .map_err(obj_err("put", &path))
}

/// Reads state handle `handle`'s object.
pub async fn read_state(
    store: &dyn ObjectStore,
    handle: StateHandle,
) -> Result<Vec<u8>, StoreError> {
    let path = Path::from(state_path(handle));
    read(store, &path).await
}

/// Reads `path`; `None` when the store says it does not exist (any other
/// error says nothing about that, and is returned).
pub(super) async fn read_found(
    store: &dyn ObjectStore,
    path: &Path,
) -> Result<Option<Vec<u8>>, StoreError> {
    let got = match store.get(path).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(obj_err("get", path)(e)),
    };
    let bytes = got.bytes().await.map_err(obj_err("get", path))?;
    Ok(Some(bytes.to_vec()))
}

/// Whether the object at `path` exists, asked of the object itself (a
/// listing of an eventually consistent store may miss the newest objects):
/// `false` only when the store answers "not found"; any other error is
/// returned, since a transient error must not read as absence.
pub(super) async fn found(store: &dyn ObjectStore, path: &Path) -> Result<bool, StoreError> {
    match store.head(path).await {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(obj_err("head", path)(e)),
    }
}

pub(super) async fn read(store: &dyn ObjectStore, path: &Path) -> Result<Vec<u8>, StoreError> {
    let got = store.get(path).await.map_err(obj_err("get", path))?;
    let bytes = got.bytes().await.map_err(obj_err("get", path))?;
    Ok(bytes.to_vec())
}

/// Names of the objects directly under `dir`.
pub(super) async fn list(store: &dyn ObjectStore, dir: &str) -> Result<Vec<String>, StoreError> {
    let prefix = Path::from(dir);
    names_under(store, Some(&prefix))
        .await
        .map_err(obj_err("list", &prefix))
}

/// The names of the objects directly under `prefix` (the root when
/// `None`), sorted; nested prefixes are not names. [`ObjStore`]'s listing
/// and [`crate::objfs::ObjFs::list`] both read the store through it.
///
/// [`ObjStore`]: super::ObjStore
pub(crate) async fn names_under(
    store: &dyn ObjectStore,
    prefix: Option<&Path>,
) -> object_store::Result<Vec<String>> {
    let listed = store.list_with_delimiter(prefix).await?;
    let mut names: Vec<String> = listed
        .objects
        .into_iter()
        .filter_map(|o| o.location.filename().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

pub(super) fn parse_position(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

pub(super) fn parse_meta_name(name: &str) -> Option<CheckpointId> {
    let digits = name.strip_prefix("chk-")?.strip_suffix(".meta")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok().map(CheckpointId))
        .flatten()
}

pub(super) fn parse_state_name(name: &str) -> Option<StateHandle> {
    (name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(name, 16).ok().map(StateHandle))
        .flatten()
}

/// Deletes `path`; an object already gone is not an error (backends differ:
/// the local file system reports it, memory does not).
pub(super) async fn delete(objects: &dyn ObjectStore, path: &Path) -> Result<(), StoreError> {
    match objects.delete(path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(obj_err("delete", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(e: object_store::Error) -> io::ErrorKind {
        match obj_err("get", &Path::from("log/1"))(e) {
            StoreError::Io { source, .. } => source.kind(),
            other => panic!("not an Io error: {other}"),
        }
    }

    #[test]
    fn refused_access_is_permission_denied_and_every_other_error_other() {
        let why = || Box::new(io::Error::other("no")) as Box<_>;
        for e in [
            object_store::Error::PermissionDenied {
                path: "log/1".into(),
                source: why(),
            },
            object_store::Error::Unauthenticated {
                path: "log/1".into(),
                source: why(),
            },
            // As `LocalFileSystem` reports a file it may not open.
            object_store::Error::Generic {
                store: "LocalFileSystem",
                source: Box::new(io::Error::new(io::ErrorKind::PermissionDenied, "no")),
            },
        ] {
            assert_eq!(kind_of(e), io::ErrorKind::PermissionDenied);
        }
        for e in [
            object_store::Error::Generic {
                store: "test",
                source: why(),
            },
            object_store::Error::NotFound {
                path: "log/1".into(),
                source: why(),
            },
        ] {
            assert_eq!(kind_of(e), io::ErrorKind::Other);
        }
    }
}
