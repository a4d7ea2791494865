//! An object store that loses answers, shared by the store's and the
//! coordinator's tests.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// An [`InMemory`] store where, once [`LostAnswers::lose_answers`] is on,
/// the first put under the log after a put of checkpoint metadata (a
/// finalize, then the commit's append) lands but answers with an error:
/// the writer cannot tell whether its commit was made. Other puts answer
/// as they land.
#[derive(Debug, Default)]
pub struct LostAnswers {
    inner: InMemory,
    losing: AtomicBool,
    after_metadata: AtomicBool,
}

impl LostAnswers {
    /// Turns the lost answers on or off.
    pub fn lose_answers(&self, on: bool) {
        self.losing.store(on, Ordering::SeqCst);
    }
}

impl fmt::Display for LostAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LostAnswers({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for LostAnswers {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let put = self.inner.put_opts(location, payload, opts).await;
        let name = location.as_ref();
        if name.starts_with(CHECKPOINT_DIR) {
            self.after_metadata.store(put.is_ok(), Ordering::SeqCst);
        } else if name.starts_with(LOG_DIR)
            && put.is_ok()
            && self.losing.load(Ordering::SeqCst)
            && self.after_metadata.swap(false, Ordering::SeqCst)
        {
            return Err(object_store::Error::Generic {
                store: "LostAnswers",
                source: "the answer was lost".into(),
            });
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
        self.inner.get_opts(location, options).await
    }
    async fn delete(&self, location: &Path) -> object_store::Result<()> {
        self.inner.delete(location).await
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.inner.copy(from, to).await
    }
    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.inner.copy_if_not_exists(from, to).await
    }
}
