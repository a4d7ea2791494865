//! Shared files (`shared_files`): the host writes every new state handle
//! as a segment of a physical file and feeds every discard, from either
//! machine or its own cleaner, to the file-merging manager
//! (`ckpt_core::files`) through its checked step; the manager's effects are
//! routed once, to the file ledger. Without `shared_files` only the
//! durable ledger hears of state files.

use ckpt_core::files::{FilesEffect, FilesEvent, FilesState};
use ckpt_core::invariants::files::FileLedger;

use super::*;

impl Sim {
    /// The empty physical files of a world (an empty manager).
    pub(super) fn fresh_files(&self) -> SharedFiles {
        match FilesState::new(self.cfg.files_config()) {
            Ok(manager) => SharedFiles {
                manager,
                ledger: FileLedger::new(),
            },
            Err(e) => panic!("files config rejected: {e}"),
        }
    }

    /// A task wrote state file `h` (a segment of a shared file with
    /// `shared_files`).
    pub(super) fn write_state(&self, n: &mut World, h: StateHandle) -> Result<(), Violation> {
        n.durable.ledger.written(h)?;
        if self.cfg.shared_files {
            self.files_event(n, FilesEvent::SegmentWritten { handle: h })?;
        }
        Ok(())
    }

    /// `deleter` deletes state file `h` (with `shared_files`: releases its
    /// segment; the manager deletes the physical file after the last).
    pub(super) fn delete_state(
        &self,
        n: &mut World,
        h: StateHandle,
        deleter: Deleter,
    ) -> Result<(), Violation> {
        n.durable.ledger.delete(h, deleter)?;
        if self.cfg.shared_files {
            self.files_event(n, FilesEvent::Discard { handle: h })?;
        }
        Ok(())
    }

    /// The job restored (`shared_files`; routed with `JobCommand::Restore`,
    /// before any new task attempt writes): no file of before takes a new
    /// segment.
    pub(super) fn files_restored(&self, n: &mut World) {
        if self.cfg.shared_files {
            if let Err(v) = self.files_event(n, FilesEvent::Restored) {
                n.violation.get_or_insert_with(|| Box::new(v));
            }
        }
    }

    /// One event through the manager's checked step, then its effects
    /// routed to the physical files.
    fn files_event(&self, n: &mut World, ev: FilesEvent) -> Result<(), Violation> {
        let (t, verdict) = checked::files_step(&n.durable.files.manager, &ev, self.rigor);
        verdict?;
        let durable = &mut *n.durable;
        durable.files.manager = t.state;
        for e in &t.step.effects {
            match *e {
                FilesEffect::Append { file, handle } => {
                    durable.files.ledger.appended(file, handle)?
                }
                FilesEffect::Delete { file } => {
                    let live = &durable.ledger;
                    let segments = durable.files.ledger.deleted(file, &|h| live.exists(h))?;
                    if segments >= 2 {
                        n.history.shared_file_deleted = true;
                    }
                }
            }
        }
        Ok(())
    }

    /// At quiescence (`shared_files`): every physical file but the open one
    /// still holds a referenced segment.
    pub(super) fn files_quiet(&self, n: &World) -> Result<(), Violation> {
        if !self.cfg.shared_files {
            return Ok(());
        }
        let live = &n.durable.ledger;
        let open = n.durable.files.manager.open_file();
        n.durable
            .files
            .ledger
            .check_quiet(&|h| live.exists(h), open)
    }
}
