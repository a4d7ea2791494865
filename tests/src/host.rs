//! Helpers for the async host's tests (`store`, `store_accounting`,
//! `sim_async_host`, `async_host_lifecycle`, the crash tests).

use std::sync::Arc;

use ckpt_core::host::fs::Fs;
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
