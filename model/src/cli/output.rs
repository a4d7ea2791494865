//! Output files (`check --trace-out` / `--diagram`, `simulate --trace-out`,
//! `zoo --traces DIR`): checked before any search starts, written only by
//! this run, and never removed.
//!
//! The rule: a path may be replaced only by this tool's own output, and only
//! when this run wrote it. So a regular file (new or existing) is written to
//! a temporary file beside it, which is renamed over it once complete: a run
//! that writes nothing, fails or is interrupted leaves what was there as it
//! was, and the temporary file, the only file the tool created, is the only
//! one it deletes. A symbolic link is followed: its target is replaced and
//! the link stays. A path that is not a regular file but can be written
//! (`/dev/null`, `/dev/stdout`, a FIFO) is written in place and never
//! replaced. A directory, a dangling link or anything that cannot be written
//! is an error before the search starts.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An output path checked before the search: where its bytes will go.
#[derive(Debug)]
pub struct Output {
    /// The path as the user gave it (for messages).
    shown: PathBuf,
    target: Target,
    /// A regular file was already at the path when the run started.
    existed: bool,
}

#[derive(Debug)]
enum Target {
    /// A regular file, new or existing: a temporary file in the directory of
    /// `path` (symbolic links resolved) is renamed over it on success.
    Replace {
        path: PathBuf,
        temp: tempfile::NamedTempFile,
    },
    /// Something writable that is not a regular file (a device, a FIFO):
    /// written in place.
    Stream(File),
    /// The process's own output (1: stdout, 2: stderr).
    Own(u8),
}

impl Output {
    /// Checks that `path` can be written and gets ready to write it: a
    /// temporary file beside a regular file, or the open device. Creates
    /// nothing at `path` itself.
    pub fn prepare(path: &Path) -> Result<Output, String> {
        let shown = path.to_path_buf();
        let cannot = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
        let system = through_the_system(path);
        if let Some(fd) = system.and_then(|s| s.own) {
            // The process's own stdout or stderr, which may be a regular file
            // (`> report.txt`): written through the process's handle, after
            // what it printed, never replaced.
            return Ok(Output {
                shown,
                target: Target::Own(fd),
                existed: false,
            });
        }
        if system.is_some() {
            // `/dev/null` and the like: appended to, never replaced.
            let f = OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(|e| cannot(&e))?;
            return Ok(Output {
                shown,
                target: Target::Stream(f),
                existed: false,
            });
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(format!(
                "cannot write {}: it is a directory (give a file name)",
                path.display()
            )),
            Ok(m) if m.is_file() => {
                // Writable as it is: the rename would replace a file the
                // user could not have written to otherwise.
                OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| cannot(&e))?;
                let real = std::fs::canonicalize(path).map_err(|e| cannot(&e))?;
                let temp = temp_beside(&real, Some(m.permissions())).map_err(|e| cannot(&e))?;
                Ok(Output {
                    shown,
                    target: Target::Replace { path: real, temp },
                    existed: true,
                })
            }
            Ok(_) => {
                // A device, a FIFO or a socket: written, never replaced.
                let f = OpenOptions::new()
                    .append(true)
                    .open(path)
                    .map_err(|e| cannot(&e))?;
                Ok(Output {
                    shown,
                    target: Target::Stream(f),
                    existed: false,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(path).is_ok() {
                    return Err(format!(
                        "cannot write {}: it is a symbolic link to nothing",
                        path.display()
                    ));
                }
                let temp = temp_beside(path, None).map_err(|e| cannot(&e))?;
                Ok(Output {
                    shown,
                    target: Target::Replace {
                        path: path.to_path_buf(),
                        temp,
                    },
                    existed: false,
                })
            }
            Err(e) => Err(cannot(&e)),
        }
    }

    /// Writes `bytes` (the temporary file is renamed over the path, or the
    /// device written); returns what was done, for the report.
    pub fn write(self, bytes: &[u8], label: &str) -> Result<String, String> {
        let cannot =
            |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", self.shown.display());
        match self.target {
            Target::Replace { path, mut temp } => {
                temp.write_all(bytes).map_err(|e| cannot(&e))?;
                temp.flush().map_err(|e| cannot(&e))?;
                temp.persist(&path).map_err(|e| cannot(&e.error))?;
            }
            Target::Stream(mut f) => {
                f.write_all(bytes).map_err(|e| cannot(&e))?;
                f.flush().map_err(|e| cannot(&e))?;
            }
            Target::Own(1) => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes)
                    .and_then(|()| out.flush())
                    .map_err(|e| cannot(&e))?;
            }
            Target::Own(_) => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes)
                    .and_then(|()| err.flush())
                    .map_err(|e| cannot(&e))?;
            }
        }
        Ok(format!("wrote the {label} to {}", self.shown.display()))
    }

    /// Nothing to write: the temporary file goes (the only file this run
    /// created), whatever was at the path stays; returns what was done.
    pub fn discard(self, label: &str) -> String {
        // Dropping the temporary file deletes it.
        if self.existed {
            format!(
                "no {label}: {} was not written (the file already there is not from this run)",
                self.shown.display()
            )
        } else {
            format!("no {label}: {} not written", self.shown.display())
        }
    }
}

/// A path that goes through `/dev` or `/proc`.
#[derive(Clone, Copy, Debug)]
struct System {
    /// It names the process's own stdout (1) or stderr (2).
    own: Option<u8>,
}

/// Whether `path`, or a link on the way to what it names, is in `/dev` or
/// `/proc` (`/dev/null`, `/dev/stdout`, `/proc/self/fd/1`): written in
/// place whatever it resolves to.
fn through_the_system(path: &Path) -> Option<System> {
    let mut p = path.to_path_buf();
    let mut system = false;
    // Links resolve in at most 40 hops (the kernel's own bound).
    for _ in 0..40 {
        system |= p.starts_with("/dev") || p.starts_with("/proc");
        for (fd, names) in [
            (1, ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]),
            (2, ["/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"]),
        ] {
            if names.iter().any(|n| p == Path::new(n)) {
                return Some(System { own: Some(fd) });
            }
        }
        match std::fs::read_link(&p) {
            Ok(target) => {
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Err(_) => break,
        }
    }
    system.then_some(System { own: None })
}

/// A temporary file in the directory of `path`, with `permissions` (those
/// of the file it will replace) or the usual ones for a new file.
fn temp_beside(
    path: &Path,
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let prefix = format!(".{name}.");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".partial");
    if let Some(p) = permissions {
        b.permissions(p);
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // As `File::create` would: 0666 less the umask.
            b.permissions(std::fs::Permissions::from_mode(0o666));
        }
    }
    b.tempfile_in(dir)
}

/// Writes `bytes` to `path` under the same rule (for a tool writing several
/// files into a directory, as `zoo --traces DIR` does).
pub fn write_file(path: &Path, bytes: &[u8], label: &str) -> Result<String, String> {
    Output::prepare(path)?.write(bytes, label)
}

/// Ends the process after a failed write to stdout, as `write_stdout`
/// (`cli/mod.rs`) does (for a command that buffers stdout itself, as `replay` does): a
/// closed pipe silently, any other error named on stderr, both with
/// [`ExitStatus::OutputFailed`](crate::cli::exit::ExitStatus::OutputFailed).
pub fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        eprintln!("error: writing to stdout: {e}");
    }
    std::process::exit(i32::from(crate::cli::exit::ExitStatus::OutputFailed.code()));
}
