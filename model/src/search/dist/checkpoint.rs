//! What a distributed search writes at a level's end so that a run killed
//! at any point continues where it was (`--checkpoint-dir`, `--resume`).
//!
//! Per worker (by its global index `i` among all processes' workers) the
//! directory holds:
//!
//! * `worker-i.visited`: the fingerprints the worker owns, 8 bytes each
//!   (little-endian), appended level by level and synced before the level's
//!   manifest is written, so a manifest never counts a fingerprint the file
//!   may not have;
//! * `worker-i.round-r`: the manifest after round `r`, written to a
//!   temporary file, synced and renamed (the rename is the commit; the
//!   directory is synced after it): the run's configuration as text, the
//!   worker count, how many fingerprints of the visited file are its
//!   (`visited_len`: later ones, appended by a round whose manifest never
//!   landed, are cut off on resume), the worker's counters, the name of the
//!   state encoding the run ships states in (empty without one), and its
//!   frontier: each state's path (action indices from an initial state) and
//!   its encoding (empty without one: the state is then rebuilt by replaying
//!   the path). A CRC-32 of the content closes the file. The two newest manifests are kept: a
//!   crash can land between two workers' commits of one round, and the
//!   run then resumes from the newest round every worker committed.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The first bytes of a manifest, before its format's version.
const MAGIC: &[u8; 7] = b"CKPTDST";

/// The manifest format's version, the byte after [`MAGIC`] (1: frontier as
/// paths only; 2: the bytes routed, the state encoding's name, and each
/// frontier state's encoding beside its path).
const VERSION: u8 = b'2';

/// A checkpoint that cannot be used: unreadable, damaged, or of another run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointError(pub String);

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckpointError {}

fn io_err(what: &str, path: &Path, e: &std::io::Error) -> CheckpointError {
    CheckpointError(format!("{what} {}: {e}", path.display()))
}

/// One worker's state after a completed round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The run's configuration as text: a resume with another one is refused.
    pub config: String,
    /// Workers over all processes.
    pub peers: u64,
    /// This worker's global index.
    pub worker: u64,
    /// The last round this manifest completes (round 0 ships the initial
    /// states; round `r` judges and expands the states at depth `r`).
    pub round: u64,
    /// How many fingerprints of `worker-i.visited` this worker owns.
    pub visited_len: u64,
    /// Successors this worker generated, initial states included.
    pub generated: u64,
    /// States this worker judged (took from its frontier).
    pub judged: u64,
    /// The `sometimes` properties discovered so far, over all workers (bit
    /// `k` for the model's `k`-th property).
    pub discovered: u64,
    /// Bytes of records this worker routed so far.
    pub routed: u64,
    /// The name and version of the encoding the frontier's states are in
    /// (the run's `Codec`; empty: none, the paths are replayed).
    pub codec: String,
    /// The worker's next frontier: each state's path (an initial state's
    /// index, then the index of each action taken among the state's
    /// actions) and its encoding (empty without a codec).
    pub frontier: Vec<(Vec<u32>, Vec<u8>)>,
}

/// The names of a worker's files: `worker-i.visited`, `worker-i.round-r`
/// (the one place that spells them).
const WORKER: &str = "worker-";
const VISITED: &str = ".visited";
const ROUND: &str = ".round-";

fn manifest_path(dir: &Path, worker: u64, round: u64) -> PathBuf {
    dir.join(format!("{WORKER}{worker}{ROUND}{round}"))
}

fn visited_path(dir: &Path, worker: u64) -> PathBuf {
    dir.join(format!("{WORKER}{worker}{VISITED}"))
}

/// Whether `name` is a worker's visited file or manifest (of any worker).
fn is_checkpoint_file(name: &str) -> bool {
    name.strip_prefix(WORKER)
        .is_some_and(|rest| rest.ends_with(VISITED) || rest.contains(ROUND))
}

fn encode(m: &Manifest) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    for v in [
        m.peers,
        m.worker,
        m.round,
        m.visited_len,
        m.generated,
        m.judged,
        m.discovered,
        m.routed,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(m.config.len() as u64).to_le_bytes());
    out.extend_from_slice(m.config.as_bytes());
    out.extend_from_slice(&(m.codec.len() as u64).to_le_bytes());
    out.extend_from_slice(m.codec.as_bytes());
    out.extend_from_slice(&(m.frontier.len() as u64).to_le_bytes());
    for (path, state) in &m.frontier {
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        for step in path {
            out.extend_from_slice(&step.to_le_bytes());
        }
        out.extend_from_slice(&(state.len() as u32).to_le_bytes());
        out.extend_from_slice(state);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads little-endian integers off a byte slice, failing on a short read.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

/// Why a manifest's bytes are refused.
enum Refusal {
    /// Not a manifest, cut short, or its checksum does not match.
    Damaged,
    /// A manifest of another format version (the byte after the magic).
    Version(u8),
}

fn decode(bytes: &[u8]) -> Result<Manifest, Refusal> {
    let (body, crc) = bytes
        .split_at_checked(bytes.len().checked_sub(4).ok_or(Refusal::Damaged)?)
        .ok_or(Refusal::Damaged)?;
    if crc32fast::hash(body).to_le_bytes() != crc || body.get(..7) != Some(MAGIC) {
        return Err(Refusal::Damaged);
    }
    match body.get(7) {
        Some(&VERSION) => {}
        Some(&v) => return Err(Refusal::Version(v)),
        None => return Err(Refusal::Damaged),
    }
    decode_body(&body[8..]).ok_or(Refusal::Damaged)
}

fn decode_body(body: &[u8]) -> Option<Manifest> {
    let mut c = Cursor(body);
    let [peers, worker, round, visited_len, generated, judged, discovered, routed] =
        [(); 8].map(|()| c.u64());
    let config_len = usize::try_from(c.u64()?).ok()?;
    let config = String::from_utf8(c.take(config_len)?.to_vec()).ok()?;
    let codec_len = usize::try_from(c.u64()?).ok()?;
    let codec = String::from_utf8(c.take(codec_len)?.to_vec()).ok()?;
    let n = c.u64()?;
    let mut frontier = Vec::new();
    for _ in 0..n {
        let len = c.u32()?;
        let path = (0..len).map(|_| c.u32()).collect::<Option<Vec<u32>>>()?;
        let state_len = usize::try_from(c.u32()?).ok()?;
        frontier.push((path, c.take(state_len)?.to_vec()));
    }
    c.0.is_empty().then_some(Manifest {
        config,
        peers: peers?,
        worker: worker?,
        round: round?,
        visited_len: visited_len?,
        generated: generated?,
        judged: judged?,
        discovered: discovered?,
        routed: routed?,
        codec,
        frontier,
    })
}

/// Commits `m`: appends the fingerprints the worker took ownership of in
/// this round (`new_owned`) to its visited file and syncs it, then writes
/// the manifest atomically (temporary file, sync, rename, directory sync),
/// then removes the worker's manifests older than the previous round.
///
/// # Errors
/// When a file cannot be written or synced.
pub fn commit(dir: &Path, m: &Manifest, new_owned: &[u64]) -> Result<(), CheckpointError> {
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, &e))?;
    let vpath = visited_path(dir, m.worker);
    let mut visited = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&vpath)
        .map_err(|e| io_err("cannot open", &vpath, &e))?;
    let bytes: Vec<u8> = new_owned.iter().flat_map(|f| f.to_le_bytes()).collect();
    visited
        .write_all(&bytes)
        .and_then(|()| visited.sync_data())
        .map_err(|e| io_err("cannot write", &vpath, &e))?;
    let path = manifest_path(dir, m.worker, m.round);
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| io_err("cannot create", &tmp, &e))?;
    f.write_all(&encode(m))
        .and_then(|()| f.sync_all())
        .map_err(|e| io_err("cannot write", &tmp, &e))?;
    fs::rename(&tmp, &path).map_err(|e| io_err("cannot rename", &tmp, &e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync", dir, &e))?;
    for old in rounds(dir, m.worker)?
        .into_iter()
        .filter(|r| r + 1 < m.round)
    {
        // A leftover old manifest is harmless (resume takes the newest).
        let _ = fs::remove_file(manifest_path(dir, m.worker, old));
    }
    Ok(())
}

/// Refuses to start a new run in `dir` when it holds another run's
/// checkpoint: a worker's visited file or a manifest of any worker. A new
/// run appends to the visited files and removes only its own older
/// manifests, so a later `--resume` there could continue from the earlier
/// run's newest round (of the same configuration, it would be accepted)
/// with the two runs' fingerprints mixed. A directory that does not exist
/// yet, or holds none of these files, is fine.
///
/// Every worker calls this before its first round. No worker commits a
/// round before every worker has started it, so each sees its directory as
/// it was before the run; a worker that refuses says so at the end of the
/// first round and every worker then ends the run with an error, before
/// any commit (with a directory per machine some may refuse and others
/// not).
///
/// # Errors
/// When the directory holds such a file, or cannot be read.
pub fn refuse_earlier_run(dir: &Path) -> Result<(), CheckpointError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("cannot read", dir, &e)),
    };
    let mut earlier: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| is_checkpoint_file(name))
        .collect();
    earlier.sort();
    match earlier.first() {
        None => Ok(()),
        Some(name) => Err(CheckpointError(format!(
            "{} holds the checkpoint of an earlier run ({name}, {} such files): continue it with --resume, or give a new or empty directory",
            dir.display(),
            earlier.len()
        ))),
    }
}

/// The rounds `worker` committed a manifest for.
fn rounds(dir: &Path, worker: u64) -> Result<Vec<u64>, CheckpointError> {
    let prefix = format!("{WORKER}{worker}{ROUND}");
    let entries = fs::read_dir(dir).map_err(|e| io_err("cannot read", dir, &e))?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix(&prefix)?.parse().ok())
        .collect())
}

/// The newest round every one of `peers` workers committed, if any.
///
/// # Errors
/// When the directory cannot be read.
pub fn latest_common_round(dir: &Path, peers: u64) -> Result<Option<u64>, CheckpointError> {
    let mut common: Option<Vec<u64>> = None;
    for w in 0..peers {
        let mine = rounds(dir, w)?;
        common = Some(match common {
            None => mine,
            Some(c) => c.into_iter().filter(|r| mine.contains(r)).collect(),
        });
    }
    Ok(common.and_then(|c| c.into_iter().max()))
}

/// Reads `worker`'s manifest of `round` and the fingerprints it owns, and
/// cuts its visited file back to them (so the resumed run appends after
/// the last committed round).
///
/// # Errors
/// When a file is missing, short, or its checksum does not match.
pub fn load(dir: &Path, worker: u64, round: u64) -> Result<(Manifest, Vec<u64>), CheckpointError> {
    let path = manifest_path(dir, worker, round);
    let bytes = fs::read(&path).map_err(|e| io_err("cannot read", &path, &e))?;
    let m = decode(&bytes).map_err(|r| {
        CheckpointError(match r {
            Refusal::Damaged => format!(
                "{}: damaged checkpoint (bad format or checksum)",
                path.display()
            ),
            Refusal::Version(v) => format!(
                "{}: a checkpoint of format version {}, this build reads version {}",
                path.display(),
                char::from(v),
                char::from(VERSION)
            ),
        })
    })?;
    if m.worker != worker || m.round != round {
        return Err(CheckpointError(format!(
            "{}: names another worker or round",
            path.display()
        )));
    }
    let vpath = visited_path(dir, worker);
    let mut raw = Vec::new();
    File::open(&vpath)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(|e| io_err("cannot read", &vpath, &e))?;
    let want = usize::try_from(m.visited_len * 8).unwrap_or(usize::MAX);
    if raw.len() < want {
        return Err(CheckpointError(format!(
            "{}: damaged checkpoint ({} fingerprints, the manifest counts {})",
            vpath.display(),
            raw.len() / 8,
            m.visited_len
        )));
    }
    raw.truncate(want);
    OpenOptions::new()
        .write(true)
        .open(&vpath)
        .and_then(|f| f.set_len(want as u64).and_then(|()| f.sync_all()))
        .map_err(|e| io_err("cannot truncate", &vpath, &e))?;
    let fps = raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    Ok((m, fps))
}

#[cfg(test)]
mod tests {
    use super::{commit, latest_common_round, load, Manifest};

    fn manifest(worker: u64, round: u64, visited_len: u64) -> Manifest {
        Manifest {
            config: "cfg".into(),
            peers: 2,
            worker,
            round,
            visited_len,
            generated: 7,
            judged: 5,
            discovered: 0b10,
            routed: 1234,
            codec: "test/1".into(),
            frontier: vec![(vec![0, 3, 1], vec![7, 8]), (vec![0], Vec::new())],
        }
    }

    #[test]
    fn round_trip_common_round_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(latest_common_round(d, 2).unwrap(), None);
        commit(d, &manifest(0, 0, 1), &[11]).unwrap();
        commit(d, &manifest(1, 0, 0), &[]).unwrap();
        commit(d, &manifest(0, 1, 3), &[12, 13]).unwrap();
        // Worker 1 died before committing round 1: round 0 is the common one,
        // and worker 0's fingerprints of round 1 are cut off.
        assert_eq!(latest_common_round(d, 2).unwrap(), Some(0));
        let (m, fps) = load(d, 0, 0).unwrap();
        assert_eq!((m, fps), (manifest(0, 0, 1), vec![11]));
        assert_eq!(
            std::fs::metadata(d.join("worker-0.visited")).unwrap().len(),
            8
        );
        // One flipped byte: refused.
        let p = d.join("worker-1.round-0");
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[20] ^= 1;
        std::fs::write(&p, bytes).unwrap();
        assert!(load(d, 1, 0).unwrap_err().0.contains("damaged"));
        // A manifest of format version 1 (its checksum right): refused as
        // such, not misread.
        let p = d.join("worker-0.round-0");
        let mut bytes = std::fs::read(&p).unwrap();
        bytes.truncate(bytes.len() - 4);
        bytes[7] = b'1';
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        std::fs::write(&p, bytes).unwrap();
        let e = load(d, 0, 0).unwrap_err().0;
        assert!(e.contains("format version 1"), "{e}");
    }
}
