//! A photo store that fails on demand: a real local directory behind it, and a switch per kind
//! of operation, so a test can take the storage away mid-way (after a commit, during a delete)
//! and bring it back.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Write,
    Read,
    /// Copy and rename.
    Move,
    Delete,
    List,
}

/// The switches, kept by the test while the server holds the store.
#[derive(Clone, Debug, Default)]
pub struct Switches(Arc<Mutex<HashSet<Op>>>, Arc<Mutex<Duration>>);

impl Switches {
    pub fn fail(&self, ops: &[Op]) {
        self.0.lock().expect("switches").extend(ops.iter().copied());
    }

    /// Every read waits this long before its bytes come (a slow or far-away store).
    pub fn slow_reads(&self, delay: Duration) {
        *self.1.lock().expect("delay") = delay;
    }

    fn read_delay(&self) -> Duration {
        *self.1.lock().expect("delay")
    }

    pub fn heal(&self) {
        self.0.lock().expect("switches").clear();
    }

    fn check(&self, op: Op) -> Result<()> {
        if self.0.lock().expect("switches").contains(&op) {
            return Err(object_store::Error::Generic {
                store: "failing",
                source: format!("the store is down for {op:?}").into(),
            });
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct FailingStore {
    inner: LocalFileSystem,
    switches: Switches,
}

impl FailingStore {
    /// A store over `dir` (created if missing), and its switches.
    pub fn over(dir: &std::path::Path) -> (Arc<dyn ObjectStore>, Switches) {
        std::fs::create_dir_all(dir).expect("store dir");
        let inner = LocalFileSystem::new_with_prefix(dir).expect("local store").with_automatic_cleanup(true);
        let switches = Switches::default();
        (Arc::new(FailingStore { inner, switches: switches.clone() }), switches)
    }
}

impl fmt::Display for FailingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FailingStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FailingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.switches.check(Op::Write)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.switches.check(Op::Write)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.switches.check(Op::Read)?;
        tokio::time::sleep(self.switches.read_delay()).await;
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        match self.switches.check(Op::Delete) {
            Ok(()) => self.inner.delete_stream(locations),
            Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
        }
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        match self.switches.check(Op::List) {
            Ok(()) => self.inner.list(prefix),
            Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.switches.check(Op::List)?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.switches.check(Op::Move)?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.switches.check(Op::Move)?;
        self.inner.rename_opts(from, to, options).await
    }
}
