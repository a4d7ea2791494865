//! An in-memory object store with test hooks on its reads and writes,
//! shared by the object store's, the coordinator's and `ObjFs`'s tests.

#![allow(
    dead_code,
    reason = "each test binary that includes this module uses a part of it"
)]

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use ckpt_core::host::store::CHECKPOINT_DIR;
use ckpt_node::objstore::LOG_DIR;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What a [`Wrapped`] store does around its in-memory store's calls.
pub trait Hooks: fmt::Debug + Default + Send + Sync + 'static {
    /// Called once a put of `location` was made (`landed`: it succeeded);
    /// `true` turns its answer into an error.
    fn lose_put_answer(&self, _location: &Path, _landed: bool) -> bool {
        false
    }
    /// Called before a read of `location`; `false` fails it.
    fn pass_get(&self, _location: &Path) -> bool {
        true
    }
    /// Called for each object `list_with_delimiter` returns (the listing
    /// the stores' recovery reads); `false` leaves it out (the object
    /// itself stays readable).
    fn listed(&self, _location: &Path) -> bool {
        true
    }
}

/// An [`InMemory`] store with [`Hooks`].
#[derive(Debug, Default)]
pub struct Wrapped<H: Hooks> {
    inner: InMemory,
    /// The hooks.
    pub hooks: H,
}

impl<H: Hooks> fmt::Display for Wrapped<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Wrapped({})", self.inner)
    }
}

fn injected(why: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "Wrapped",
        source: why.to_string().into(),
    }
}

#[async_trait]
impl<H: Hooks> ObjectStore for Wrapped<H> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let put = self.inner.put_opts(location, payload, opts).await;
        if self.hooks.lose_put_answer(location, put.is_ok()) {
            return Err(injected("the answer was lost"));
        }
        put
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !self.hooks.pass_get(location) {
            return Err(injected("the read was refused"));
        }
        self.inner.get_opts(location, options).await
    }
    async fn delete(&self, location: &Path) -> object_store::Result<()> {
        self.inner.delete(location).await
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let mut got = self.inner.list_with_delimiter(prefix).await?;
        got.objects.retain(|m| self.hooks.listed(&m.location));
        Ok(got)
    }
    async fn copy(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.inner.copy(from, to).await
    }
    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.inner.copy_if_not_exists(from, to).await
    }
}

/// Once [`LoseAnswers::lose_answers`] is on, the first put under the log
/// after a put of checkpoint metadata (a finalize, then the commit's
/// append) lands but answers with an error: the writer cannot tell
/// whether its commit was made. Other puts answer as they land.
#[derive(Debug, Default)]
pub struct LoseAnswers {
    losing: AtomicBool,
    after_metadata: AtomicBool,
}

impl LoseAnswers {
    /// Turns the lost answers on or off.
    pub fn lose_answers(&self, on: bool) {
        self.losing.store(on, Ordering::SeqCst);
    }
}

impl Hooks for LoseAnswers {
    fn lose_put_answer(&self, location: &Path, landed: bool) -> bool {
        let name = location.as_ref();
        if name.starts_with(CHECKPOINT_DIR) {
            self.after_metadata.store(landed, Ordering::SeqCst);
            return false;
        }
        name.starts_with(LOG_DIR)
            && landed
            && self.losing.load(Ordering::SeqCst)
            && self.after_metadata.swap(false, Ordering::SeqCst)
    }
}

/// Reads block their thread (at most a second) until [`Gate::open`]; the
/// gate says when a read is waiting.
#[derive(Debug, Default)]
pub struct Gate {
    /// (open, a read is waiting)
    state: Arc<(Mutex<(bool, bool)>, Condvar)>,
}

impl Gate {
    /// Opens the gate.
    pub fn open(&self) {
        self.state.0.lock().unwrap().0 = true;
        self.state.1.notify_all();
    }
    /// Waits (at most a second) until a read waits at the gate.
    pub fn wait_entered(&self) {
        let (state, cv) = &*self.state;
        let _ = cv
            .wait_timeout_while(state.lock().unwrap(), Duration::from_secs(1), |s| !s.1)
            .unwrap();
    }
}

impl Hooks for Gate {
    /// Says a read is waiting, then waits for the gate; whether it opened.
    fn pass_get(&self, _location: &Path) -> bool {
        let (state, cv) = &*self.state;
        state.lock().unwrap().1 = true;
        cv.notify_all();
        let (state, _) = cv
            .wait_timeout_while(state.lock().unwrap(), Duration::from_secs(1), |s| !s.0)
            .unwrap();
        state.0
    }
}

/// While [`FailReads::fail`] is on, reads of the paths starting with its
/// prefix fail with an error other than "not found" (the objects are there).
#[derive(Debug, Default)]
pub struct FailReads {
    prefix: std::sync::Mutex<String>,
    failing: AtomicBool,
}

impl FailReads {
    /// Fails the reads under `prefix` (`None`: none fail).
    pub fn fail(&self, prefix: Option<&str>) {
        *self.prefix.lock().unwrap() = prefix.unwrap_or_default().to_string();
        self.failing.store(prefix.is_some(), Ordering::SeqCst);
    }
}

impl Hooks for FailReads {
    fn pass_get(&self, location: &Path) -> bool {
        !(self.failing.load(Ordering::SeqCst)
            && location
                .as_ref()
                .starts_with(self.prefix.lock().unwrap().as_str()))
    }
}

/// While [`HideListed::hide`] is on, listings leave out the objects whose
/// paths start with its prefix (as an eventually consistent listing may
/// miss the newest objects); reads of them still succeed.
#[derive(Debug, Default)]
pub struct HideListed {
    prefix: std::sync::Mutex<Option<String>>,
}

impl HideListed {
    /// Hides the objects under `prefix` from listings (`None`: none).
    pub fn hide(&self, prefix: Option<&str>) {
        *self.prefix.lock().unwrap() = prefix.map(str::to_string);
    }
}

/// [`HideListed`] and [`FailReads`] together: an object a listing misses
/// and that cannot be read either.
#[derive(Debug, Default)]
pub struct HideAndFail {
    /// The listings' part.
    pub hide: HideListed,
    /// The reads' part.
    pub fail: FailReads,
}

impl Hooks for HideAndFail {
    fn pass_get(&self, location: &Path) -> bool {
        self.fail.pass_get(location)
    }
    fn listed(&self, location: &Path) -> bool {
        self.hide.listed(location)
    }
}

impl Hooks for HideListed {
    fn listed(&self, location: &Path) -> bool {
        self.prefix
            .lock()
            .unwrap()
            .as_deref()
            .is_none_or(|p| !location.as_ref().starts_with(p))
    }
}

/// Once [`LoseNextLogAnswer::arm`] is called, the next put under the log
/// that lands answers with an error (once): whatever the entry was, its
/// writer cannot tell whether it was made.
#[derive(Debug, Default)]
pub struct LoseNextLogAnswer {
    armed: AtomicBool,
}

impl LoseNextLogAnswer {
    /// Loses the next landed log put's answer.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

impl Hooks for LoseNextLogAnswer {
    fn lose_put_answer(&self, location: &Path, landed: bool) -> bool {
        location.as_ref().starts_with(LOG_DIR) && landed && self.armed.swap(false, Ordering::SeqCst)
    }
}
