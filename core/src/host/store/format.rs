//! The store's on-disk names and formats: the directory and file names of the
//! layout, the paths of state and metadata files, and the checkpoint
//! metadata encoding ([`Metadata`], versions 1 and 2) with its decode errors.

#[allow(clippy::wildcard_imports)] // the store's own items and imports
use super::*;

/// Metadata magic bytes.
pub const META_MAGIC: &[u8; 8] = b"CKPTMETA";
/// The metadata format version written.
pub const META_VERSION: u32 = 2;
/// The oldest metadata format version still read (no savepoint flag).
pub const META_VERSION_MIN: u32 = 1;
/// The savepoint bit of the version-2 flags word.
pub const META_FLAG_SAVEPOINT: u32 = 1;
/// Id-counter magic bytes.
pub const IDS_MAGIC: &[u8; 8] = b"CKPTIDS1";
/// Leader-record magic bytes.
pub const LEADER_MAGIC: &[u8; 8] = b"CKPTGEN1";
/// Most state handles one checkpoint may reference (a bound on what a reader
/// allocates for a corrupt count).
pub const HANDLES_MAX: u32 = 1 << 24;
/// Directory of state files.
pub const STATE_DIR: &str = "state";
/// Directory of checkpoint metadata.
pub const CHECKPOINT_DIR: &str = "checkpoints";
/// Directory of leader records (one file per claimed generation).
pub const LEADER_DIR: &str = "leader";
/// The id counter file.
pub const IDS_FILE: &str = "ids";

/// Bytes before the handles in version 1.
pub(super) const V1_HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4;
/// Bytes before the handles in version 2 (the flags word added).
pub(super) const V2_HEADER_BYTES: usize = V1_HEADER_BYTES + 4;

/// The path of a state handle's file: `state/` and the handle as 16 hex
/// digits. Messages name a handle by this path, never by its decimal value.
#[must_use]
pub fn state_path(handle: StateHandle) -> String {
    join(STATE_DIR, &format!("{:016x}", handle.0))
}

/// Writes a state handle's file durably (the task's async part does this
/// before it acknowledges).
pub fn write_state(fs: &dyn Fs, handle: StateHandle, bytes: &[u8]) -> io::Result<()> {
    write_durable(fs, &state_path(handle), bytes)
}

/// Reads a state handle's file.
pub fn read_state(fs: &dyn Fs, handle: StateHandle) -> io::Result<Vec<u8>> {
    fs.read(&state_path(handle))
}

/// The path of checkpoint `id`'s stored metadata (`checkpoints/chk-<id>.meta`).
#[must_use]
pub fn meta_path(id: CheckpointId) -> String {
    meta_name(id, "meta")
}

pub(super) fn meta_name(id: CheckpointId, ext: &str) -> String {
    join(CHECKPOINT_DIR, &format!("chk-{:020}.{ext}", id.0))
}

pub(super) fn leader_path(generation: Generation) -> String {
    join(LEADER_DIR, &format!("gen-{:020}", generation.0))
}

/// The metadata of one checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The job.
    pub job: JobId,
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Whether it is a savepoint (the user's: never removed by retention).
    pub savepoint: bool,
    /// When it was triggered (the coordinator's time), as
    /// [`RecoveredCheckpoint::timestamp`]. Version-1 files hold the
    /// finalize time here.
    pub timestamp: Millis,
    /// Its state handles.
    pub handles: Vec<StateHandle>,
}

/// Why a metadata file was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MetadataError {
    /// Shorter than its header or than its declared contents.
    #[error("truncated: {len} bytes, at least {needed} needed")]
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes needed.
        needed: usize,
    },
    /// Not a ckpt metadata file.
    #[error("foreign file: bad magic")]
    Foreign,
    /// A format version this reader does not know.
    #[error(
        "unsupported metadata version {0} (this reader knows {META_VERSION_MIN} to {META_VERSION})"
    )]
    UnsupportedVersion(u32),
    /// Flag bits this reader does not know (version 2).
    #[error("unknown metadata flags {0:#x}")]
    UnknownFlags(u32),
    /// The checksum does not match the contents.
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    ChecksumMismatch {
        /// Checksum in the file.
        stored: u32,
        /// Checksum of the contents.
        computed: u32,
    },
    /// Bytes after the checksum.
    #[error("{0} trailing bytes after the checksum")]
    TrailingBytes(usize),
    /// More handles than [`HANDLES_MAX`].
    #[error("{0} handles declared (at most {HANDLES_MAX})")]
    TooManyHandles(u32),
    /// Metadata of another job.
    #[error("metadata of job {found}, this store serves job {expected}")]
    WrongJob {
        /// This store's job.
        expected: JobId,
        /// The job in the file.
        found: JobId,
    },
    /// The id in the file is not the id in its name.
    #[error("file named for checkpoint {name} holds checkpoint {contents}")]
    IdMismatch {
        /// The id in the file name.
        name: CheckpointId,
        /// The id in the contents.
        contents: CheckpointId,
    },
}

/// The fields of a metadata file, parsed without the checksum check.
pub(super) struct RawMetadata {
    version: u32,
    job: JobId,
    checkpoint: CheckpointId,
    timestamp: Millis,
    flags: u32,
    handles: Vec<StateHandle>,
    /// Bytes covered by the checksum.
    body: usize,
}

impl RawMetadata {
    fn parse(bytes: &[u8]) -> Result<RawMetadata, MetadataError> {
        if bytes.len() >= 8 && &bytes[..8] != META_MAGIC {
            return Err(MetadataError::Foreign);
        }
        if bytes.len() < 12 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: V1_HEADER_BYTES + 4,
            });
        }
        let mut r = Reader { bytes, at: 8 };
        let version = r.u32();
        let header = match version {
            1 => V1_HEADER_BYTES,
            2 => V2_HEADER_BYTES,
            v => return Err(MetadataError::UnsupportedVersion(v)),
        };
        if bytes.len() < header + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: header + 4,
            });
        }
        let job = JobId(r.u64());
        let checkpoint = CheckpointId(r.u64());
        let timestamp = Millis(r.u64());
        let flags = if version >= 2 { r.u32() } else { 0 };
        let n = r.u32();
        if n > HANDLES_MAX {
            return Err(MetadataError::TooManyHandles(n));
        }
        let body = header + 8 * n as usize;
        if bytes.len() < body + 4 {
            return Err(MetadataError::Truncated {
                len: bytes.len(),
                needed: body + 4,
            });
        }
        let handles = (0..n).map(|_| StateHandle(r.u64())).collect();
        Ok(RawMetadata {
            version,
            job,
            checkpoint,
            timestamp,
            flags,
            handles,
            body,
        })
    }
}

impl Metadata {
    /// Encodes the metadata (version [`META_VERSION`]) with its checksum.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let flags = if self.savepoint {
            META_FLAG_SAVEPOINT
        } else {
            0
        };
        self.encode_as(META_VERSION, flags)
    }

    /// Encodes the metadata in the version-1 format (no savepoint flag), for
    /// tests and tools that must produce what an older writer left on disk.
    /// `None` for a savepoint, which version 1 cannot express.
    #[must_use]
    pub fn encode_v1(&self) -> Option<Vec<u8>> {
        (!self.savepoint).then(|| self.encode_as(1, 0))
    }

    fn encode_as(&self, version: u32, flags: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(V2_HEADER_BYTES + 8 * self.handles.len() + 4);
        b.extend_from_slice(META_MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&self.job.0.to_le_bytes());
        b.extend_from_slice(&self.checkpoint.0.to_le_bytes());
        b.extend_from_slice(&self.timestamp.0.to_le_bytes());
        if version >= 2 {
            b.extend_from_slice(&flags.to_le_bytes());
        }
        let n = u32::try_from(self.handles.len()).unwrap_or(u32::MAX);
        b.extend_from_slice(&n.to_le_bytes());
        for h in &self.handles {
            b.extend_from_slice(&h.0.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks metadata bytes of either version (magic, version,
    /// flags, length, checksum).
    pub fn decode(bytes: &[u8]) -> Result<Metadata, MetadataError> {
        let raw = RawMetadata::parse(bytes)?;
        let mut r = Reader {
            bytes,
            at: raw.body,
        };
        let stored = r.u32();
        let computed = crc32fast::hash(&bytes[..raw.body]);
        if stored != computed {
            return Err(MetadataError::ChecksumMismatch { stored, computed });
        }
        if bytes.len() > raw.body + 4 {
            return Err(MetadataError::TrailingBytes(bytes.len() - raw.body - 4));
        }
        if raw.flags & !META_FLAG_SAVEPOINT != 0 {
            return Err(MetadataError::UnknownFlags(raw.flags));
        }
        Ok(Metadata {
            job: raw.job,
            checkpoint: raw.checkpoint,
            savepoint: raw.version >= 2 && raw.flags & META_FLAG_SAVEPOINT != 0,
            timestamp: raw.timestamp,
            handles: raw.handles,
        })
    }
}

/// The handles a damaged metadata file still names, if its structure
/// parses (the checksum, the flags and trailing bytes are not checked):
/// recovery keeps those state files for a human to repair the checkpoint
/// (the file store's, and ckpt-node's object store's, which must agree).
pub fn handles_named_by(bytes: &[u8]) -> Option<Vec<StateHandle>> {
    RawMetadata::parse(bytes).ok().map(|m| m.handles)
}

/// A bounds-checked little-endian reader (lengths are checked by the caller
/// before reading; a short read yields zeros rather than a panic).
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl Reader<'_> {
    pub(super) fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(s);
        }
        self.at += N;
        out
    }
    pub(super) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take::<4>())
    }
    pub(super) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take::<8>())
    }
}
